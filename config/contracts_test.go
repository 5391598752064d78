package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateContracts(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Contracts)
		want   string
	}{
		{"TTL", func(c *Contracts) { c.ContractTTL = 0 }, "gate.contract_ttl: must be more than 0"},
		{"TTLTooLong", func(c *Contracts) { c.ContractTTL = 48 * time.Hour }, "gate.contract_ttl: must be more than 0 and at most 24h0m0s"},
		{"SecretEnv", func(c *Contracts) { c.ContractSecretEnv = "not a name" }, "gate.contract_secret_env: must name an environment variable"},
		{"Rate", func(c *Contracts) { c.ContractRate = -1 }, "gate.contract_rate: must be more than 0"},
		{"Primitives", func(c *Contracts) { c.Primitives = "/nonexistent/catalog.yaml" }, "gate.primitives: cannot read the catalog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig(t)
			tt.change(&c.Gate.Contracts)
			err := c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestContractsFromEnv(t *testing.T) {
	env := map[string]string{
		"AMPFLOW_GATE_CONTRACT_TTL":        "2m",
		"AMPFLOW_GATE_CONTRACT_SECRET_ENV": "MY_SIGNING_KEY",
		"MY_SIGNING_KEY":                   "k3y",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := LoadEnv(New(), "", lookup)
	if err != nil {
		t.Fatal(err)
	}
	if c.Gate.ContractTTL != 2*time.Minute || c.Gate.ContractRate != 120 || c.ContractSecret(lookup) != "k3y" {
		t.Errorf("contracts %+v, secret %q", c.Gate.Contracts, c.ContractSecret(lookup))
	}
	if d := Default().Gate.Contracts; d.ContractTTL != 15*time.Minute || d.ContractSecretEnv != DefaultContractSecretEnv || d.Primitives != "" {
		t.Errorf("defaults %+v", d)
	}
}
