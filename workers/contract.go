package workers

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/ampflow/ampflow/activities/contract"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/amcp"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/runshift"
	"github.com/ampflow/ampflow/workflows/gate"
)

// ContractSecretFile is the file in data_dir where `ampflow dev` keeps the
// contract signing secret it made, when gate.contract_secret_env names an
// unset variable.
const ContractSecretFile = "contract.secret"

// addContracts adds the risk contracts' routes to the API: the catalog
// of gate.primitives (checked now: a bad file stops the start), the
// signing secret, the agents' keys and the gates that contracts needing
// approval open.
func addContracts(api *httpapi.Server, o Options, parts *Parts, log *slog.Logger) error {
	cfg := o.Config
	catalog, err := contract.Load(cfg.Gate.Primitives)
	if err != nil {
		return fmt.Errorf("gate.primitives: %w", err)
	}
	secret := parts.contractSecret
	if secret == "" {
		log.Warn("risk contracts are not served: the signing secret's variable is unset", "variable", cfg.Gate.ContractSecretEnv)
	}
	// The signals' keys: one agent, one key, for both.
	keys, err := runshift.NewKeys(cfg.Gate.Agents, os.LookupEnv)
	if err != nil {
		return err
	}
	opts := amcp.Options{
		Catalog: catalog, Secret: []byte(secret), TTL: cfg.Gate.ContractTTL, Rate: cfg.Gate.ContractRate, Logger: log,
		Authenticate: func(header string) (string, bool) {
			a, ok := keys.Check(header)
			return a.ID, ok
		},
	}
	if parts.Store != nil {
		opts.Store = parts.Store
		if c := o.Temporal; c != nil {
			start := func(ctx context.Context, in gate.Input) (gate.Started, error) {
				return gate.Start(ctx, c, cfg.Temporal.TaskQueue, in)
			}
			opts.Gates = amcp.WorkflowGates{Start: start, Store: parts.Store}
		}
	}
	amcp.Register(api, opts)
	return nil
}

// resolveContractSecret returns the contract signing secret: the value of
// the variable gate.contract_secret_env names, else, when file is set, the
// secret kept there (made on first use); empty when neither.
func resolveContractSecret(cfg config.Config, file string) (string, error) {
	secret := cfg.ContractSecret(os.LookupEnv)
	if secret != "" || file == "" {
		return secret, nil
	}
	secret, err := keptSecret(file, "contract secret")
	if err != nil {
		return "", fmt.Errorf("gate.contract_secret_env: %w", err)
	}
	return secret, nil
}
