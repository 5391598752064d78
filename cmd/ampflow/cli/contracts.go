package cli

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/amcp"
)

// DefaultAgentKeyEnv is the variable `ampflow contracts` reads the agent
// key from unless --key-env names another.
const DefaultAgentKeyEnv = "AMPFLOW_AGENT_KEY"

// contractsCommand is `ampflow contracts`: an agent's risk contracts,
// read through the HTTP API with its agent key.
func (a *App) contractsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "contracts",
		Short:   "Show an agent's risk contracts (AMCP), with its agent key",
		GroupID: groupAgent,
		Long: "A contract belongs to the agent key that decided it (POST /v1/decide): these\n" +
			"commands present that key (gate.agents), read from the variable --key-env\n" +
			"names, not an API token. Admins see a contract's gate with ampflow gates show.",
	}
	cmd.AddCommand(a.contractsShowCommand())
	return cmd
}

func (a *App) contractsShowCommand() *cobra.Command {
	keyEnv := DefaultAgentKeyEnv
	cmd := &cobra.Command{
		Use:   "show CONTRACT_ID",
		Short: "Show a contract's state and, once approved, its approvalToken",
		Long: "Show prints the contract as GET /v1/contracts/{contractId} answers it: its state\n" +
			"(issued, awaiting_approval, approved, rejected, redeemed or expired), primitive,\n" +
			"parameters, risk, expiry, gate and, once approved, the approvalToken that\n" +
			"POST /v1/execute takes. -o json prints that answer.",
		Example: "  AMPFLOW_AGENT_KEY=$DEPLOYER_KEY ampflow contracts show cnt_6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b\n" +
			"  ampflow contracts show --key-env DEPLOYER_KEY cnt_6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b -o json",
		Args: exactArgs(1, "CONTRACT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, _ := a.LookupEnv(keyEnv)
			if key == "" {
				return UsageError(fmt.Errorf("--key-env: %s is unset or empty; set it to the agent key that decided the contract", keyEnv))
			}
			cfg, err := a.clientConfig()
			if err != nil {
				return err
			}
			c := newAPIClient(cfg.API.URL, key)
			c.file = cfg.File
			var v amcp.ContractView
			if err := c.do(cmd.Context(), http.MethodGet, "/v1/contracts/"+url.PathEscape(args[0]), nil, nil, &v); err != nil {
				var te *task.Error
				if errors.As(err, &te) && te.Code == amcp.CodeUnauthorized {
					err = fmt.Errorf("the ampflow API at %s does not take the key in %s: it must be an agent key of gate.agents", c.base, keyEnv)
				}
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(v)
			}
			_, err = fmt.Fprint(a.Stdout, renderContract(v))
			return err
		},
	}
	cmd.Flags().StringVar(&keyEnv, "key-env", keyEnv, "read the agent key from the environment variable `NAME`")
	return cmd
}

// renderContract is a contract as `contracts show` prints it.
func renderContract(v amcp.ContractView) string {
	var b strings.Builder
	line := func(k, val string) {
		if val != "" {
			fmt.Fprintf(&b, "%-15s %s\n", k, val)
		}
	}
	line("contract", v.ContractID)
	line("state", v.State)
	line("primitive", v.Primitive)
	names := make([]string, 0, len(v.Parameters))
	for k := range v.Parameters {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		line("parameter", fmt.Sprintf("%s=%v", k, v.Parameters[k]))
	}
	line("risk", fmt.Sprintf("%d, %s, %s", v.PrimitiveRiskScore, v.Risk.Level, v.Risk.MinimumHandling))
	line("reasoning", strings.Join(v.Risk.Reasoning, ", "))
	line("session", v.SessionID)
	line("issued", v.IssuedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	line("expires", v.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	line("gate", v.GateID)
	line("decided by", v.DecidedBy)
	line("approvalToken", v.ApprovalToken)
	if v.RedeemedAt != nil {
		line("redeemed", v.RedeemedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	line("digest", v.Digest)
	return b.String()
}
