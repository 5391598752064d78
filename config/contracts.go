package config

import (
	"os"
	"time"
)

// Contracts configures the risk contracts (AMCP) under the gate section:
// the primitive catalog, how long a contract lives, the secret that signs
// contracts and approval tokens, and each agent key's request rate.
type Contracts struct {
	// Primitives is the path of the primitive catalog (YAML); empty is
	// the default catalog built into ampflow. The file is checked when
	// the worker starts; its errors name the key path inside it.
	Primitives string `mapstructure:"primitives" json:"primitives"`
	// ContractTTL is how long a contract may be redeemed after it is
	// issued.
	ContractTTL time.Duration `mapstructure:"contract_ttl" json:"contract_ttl"`
	// ContractSecretEnv names the environment variable holding the secret
	// that signs contracts and approval tokens; every worker must share
	// it. Unset or empty, `ampflow dev` makes one and keeps it in
	// data_dir, and other workers serve no contracts.
	ContractSecretEnv string `mapstructure:"contract_secret_env" json:"contract_secret_env"`
	// ContractRate is how many /v1/decide, /v1/contracts and /v1/execute
	// requests one agent key may make per minute (per worker).
	ContractRate int `mapstructure:"contract_rate" json:"contract_rate"`
}

// DefaultContractSecretEnv is the default of gate.contract_secret_env.
const DefaultContractSecretEnv = "AMPFLOW_CONTRACT_SIGNING_KEY"

// MaxContractTTL bounds gate.contract_ttl.
const MaxContractTTL = 24 * time.Hour

// contractDefaults are the defaults of the contracts' keys.
var contractDefaults = map[string]any{
	"gate.primitives":          "",
	"gate.contract_ttl":        15 * time.Minute,
	"gate.contract_secret_env": DefaultContractSecretEnv,
	"gate.contract_rate":       120,
}

func init() {
	for k, v := range contractDefaults {
		defaults[k] = v
	}
}

func (c Config) validateContracts(ps *problems) {
	k := c.Gate.Contracts
	if k.ContractTTL <= 0 || k.ContractTTL > MaxContractTTL {
		ps.add("gate.contract_ttl", "must be more than 0 and at most %s, not %s", MaxContractTTL, k.ContractTTL)
	}
	if !envName.MatchString(k.ContractSecretEnv) {
		ps.add("gate.contract_secret_env", "must name an environment variable, not %q", k.ContractSecretEnv)
	}
	if k.ContractRate <= 0 {
		ps.add("gate.contract_rate", "must be more than 0 requests a minute, not %d", k.ContractRate)
	}
	if k.Primitives != "" {
		if st, err := os.Stat(k.Primitives); err != nil {
			ps.add("gate.primitives", "cannot read the catalog: %v", err)
		} else if st.IsDir() {
			ps.add("gate.primitives", "must be a YAML file, not the directory %s", k.Primitives)
		}
	}
}

// ContractSecret reads the contract secret from the environment variable
// gate.contract_secret_env names; empty when it is unset.
func (c Config) ContractSecret(lookup func(string) (string, bool)) string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	v, _ := lookup(c.Gate.Contracts.ContractSecretEnv)
	return v
}
