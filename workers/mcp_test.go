package workers

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/mcp"
)

// headers adds fixed headers to every request of an MCP client.
type headers struct {
	h    http.Header
	base http.RoundTripper
}

func (t headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// TestMCPTools lists the MCP server's tools on the API as a worker
// builds it, every system included: each tool is there, and its input
// schema stands alone (each reference resolves inside it). The gate's
// tools present the agent key of mcp.AgentKeyHeader, not the API token.
func TestMCPTools(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const key = "deployer-key-0123456789abcdef"
	t.Setenv("MCP_TEST_GATE_KEY", key)
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.SSOT.URL = filepath.Join(cfg.DataDir, "ampflow.db")
	cfg.Gate.Agents = []config.GateAgent{{ID: "deployer", KeyEnv: "MCP_TEST_GATE_KEY"}}
	cfg.Agents.Executor.GateAgent = "deployer"
	o := Options{Config: cfg, Temporal: c, Logger: slog.New(slog.DiscardHandler),
		ContractSecretFile: filepath.Join(cfg.DataDir, "contract.secret"), DecisionKeyFile: filepath.Join(cfg.DataDir, DecisionKeyFile)}
	parts, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	defer parts.Close()
	api, _, err := buildAPI(o, parts, nil, &runtime{log: o.Logger}, o.Logger)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api.Handler())
	defer ts.Close()

	connect := func(h http.Header) *sdk.ClientSession {
		tr := &sdk.StreamableClientTransport{Endpoint: ts.URL + mcp.Path, DisableStandaloneSSE: true, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: headers{h, http.DefaultTransport}}}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connect(http.Header{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, tl := range res.Tools {
		raw, _ := json.Marshal(tl.InputSchema)
		var s map[string]any
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		got[tl.Name] = s
		var refs func(v any)
		refs = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if r, ok := v["$ref"].(string); ok && !resolves(s, r) {
					t.Errorf("tool %s: reference %s has no target in its schema", tl.Name, r)
				}
				for _, x := range v {
					refs(x)
				}
			case []any:
				for _, x := range v {
					refs(x)
				}
			}
		}
		refs(s)
	}
	for _, name := range []string{"inbox", "ack", "send", "heartbeat", "lease_acquire", "lease_renew", "lease_release", "leases",
		"chat_send", "chat_inbox", "chat_thread", "chat_search", "signal", "request_approval", "approval_status",
		"decide", "contract", "execute", "goal_start", "goal_show"} {
		if got[name] == nil {
			t.Errorf("no tool %s", name)
		}
	}
	props := func(tool string) map[string]any { p, _ := got[tool]["properties"].(map[string]any); return p }
	if props("signal")["gate_required"] == nil || props("request_approval")["gate_required"] != nil ||
		props("request_approval")["proposed_action"] == nil || props("decide")["intent"] == nil {
		t.Errorf("gate tools' inputs: signal %v, request_approval %v", props("signal"), props("request_approval"))
	}

	if props("goal_start")["tasks"] == nil || props("goal_show")["goal_id"] == nil {
		t.Errorf("goal tools' inputs: goal_start %v, goal_show %v", props("goal_start"), props("goal_show"))
	}

	approval := map[string]any{"run_id": "run-1", "summary": "deploy", "proposed_action": "deploy to production"}
	call := func(cs *sdk.ClientSession, name string, args map[string]any) string {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*sdk.TextContent).Text
	}
	// The open API's caller is no gate agent: the gate refuses it.
	if out := call(cs, "request_approval", approval); !strings.Contains(out, `"code":"unauthenticated"`) {
		t.Errorf("request_approval without a gate key: %s", out)
	}
	// With the key, the gate takes the signal as its agent, deployer
	// (agent_id filled): here it fails only to start the gate's
	// workflow, as there is no Temporal.
	keyed := connect(http.Header{mcp.AgentKeyHeader: {key}})
	if out := call(keyed, "request_approval", approval); !strings.Contains(out, `"code":"unavailable","message":"opening gate gate_`) {
		t.Errorf("request_approval with deployer's key: %s", out)
	}

	// A runner connects with the headers its CLI's configuration names,
	// as the worker builds it: the executor's carry its gate agent's key
	// (agents.executor.gate_agent: deployer), so the gate takes its signal
	// as deployer; the reviewer, with no gate agent, has no key.
	for role, want := range map[amp.Role]string{amp.RoleExecutor: `"code":"unavailable","message":"opening gate gate_`, amp.RoleReviewer: `"code":"unauthenticated"`} {
		cred, err := runCredentials(cfg, parts.Tasks.DecisionKey).Mint(role, "T-2026-001", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if out := call(connect(runnerHeaders(t, runnerMCP(cfg), role, cred, ts.URL+mcp.Path)), "request_approval", approval); !strings.Contains(out, want) {
			t.Errorf("request_approval from the %s's runner: %s", role, out)
		}
	}
}

// runnerHeaders are the headers a Claude Code runner of role sends to
// ampflow's MCP server at url: those of its --mcp-config, each ${VAR}
// read from the run's environment.
func runnerHeaders(t *testing.T, m *delivery.RunnerMCP, role amp.Role, credential, url string) http.Header {
	t.Helper()
	cfg, err := runner.MCP{URL: url, Token: credential, AgentKey: m.AgentKeys[role]}.Config(runner.Claude)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		MCPServers map[string]struct {
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(cfg.Args[1]), &c); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	h := http.Header{}
	for k, v := range c.MCPServers[runner.MCPServerName].Headers {
		h.Set(k, os.Expand(v, func(name string) string { return env[name] }))
	}
	return h
}
