package workers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/activities/contract"
	"github.com/ampflow/ampflow/activities/ssot"
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
		if o.Temporal != nil {
			opts.Gates = contractGates{store: parts.Store, temporal: o.Temporal, queue: cfg.Temporal.TaskQueue}
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

// keptSecret reads the secret (what names it in errors) kept in file,
// making it (32 random bytes, hex, mode 0600) when the file does not
// exist.
func keptSecret(file, what string) (string, error) {
	b, err := os.ReadFile(file)
	if err == nil {
		if s := strings.TrimSpace(string(b)); s != "" {
			return s, nil
		}
		return "", fmt.Errorf("%s is empty", file)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading %s: %w", file, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("making a %s: %w", what, err)
	}
	s := hex.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("keeping the %s: %w", what, err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process made it first: use theirs.
		return keptSecret(file, what)
	}
	if err != nil {
		return "", fmt.Errorf("keeping the %s: %w", what, err)
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("keeping the %s in %s: %w", what, file, err)
	}
	return s, f.Close()
}

// contractGates opens a contract's gate as a gate workflow (which stores
// its row in the gates table) and reads its status there.
type contractGates struct {
	store    *ssot.DB
	temporal client.Client
	queue    string
}

// ContractGateID is the id of the gate deciding contract id.
func ContractGateID(contractID string) string {
	return "gate_" + strings.TrimPrefix(contractID, contract.IDPrefix)
}

func (g contractGates) Open(ctx context.Context, c contract.Contract, digest string) (string, error) {
	id := ContractGateID(c.ID)
	agent := strings.TrimPrefix(c.Owner, "agent:")
	params, _ := json.Marshal(c.Parameters)
	in := gate.Input{
		GateID: id, Kind: gate.KindContract, AgentID: agent,
		Summary:        fmt.Sprintf("contract %s: %s, risk %d (%s), needs %s", c.ID, c.Primitive, c.PrimitiveRiskScore, c.Risk.Level, c.Risk.MinimumHandling),
		ProposedAction: fmt.Sprintf("execute %s with %s", c.Primitive, params),
		Reasons:        append([]string{"minimumHandling " + string(c.Risk.MinimumHandling)}, c.Risk.Reasoning...),
		Contract: &gate.ContractRef{
			ID: c.ID, Primitive: c.Primitive, Parameters: c.Parameters, Digest: digest,
			Level: c.Risk.Level, MinimumHandling: string(c.Risk.MinimumHandling),
		},
		ReceivedAt: c.IssuedAt,
		// An approval after the contract expired could not be redeemed.
		ExpiresAt: c.ExpiresAt,
	}
	if _, err := gate.Start(ctx, g.temporal, g.queue, in); err != nil {
		return "", err
	}
	return id, nil
}

func (g contractGates) Status(ctx context.Context, gateID string) (string, string, error) {
	row, err := g.store.Gate(ctx, gateID)
	if errors.Is(err, ssot.ErrNotFound) {
		// The gate workflow stores its row in its first step.
		return string(gate.StatusPending), "", nil
	}
	if err != nil {
		return "", "", err
	}
	return row.Status, row.ResolvedBy, nil
}
