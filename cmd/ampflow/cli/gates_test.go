package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/config/pricing"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/runshift"
	"github.com/ampflow/ampflow/workflows/gate"
)

// TestGatesCommands lists and shows gates through the API's own handlers.
func TestGatesCommands(t *testing.T) {
	ctx := context.Background()
	store, err := ssot.Open(ctx, filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := config.Default().Gate
	cfg.Agents = []config.GateAgent{{ID: "bot", KeyEnv: "K"}}
	in, err := runshift.NewIntake(cfg, config.Default().Pricing, store, func(_ context.Context, in gate.Input) (gate.Started, error) {
		return gate.Started{GateID: in.GateID}, nil
	}, func(string) (string, bool) { return "key-0123456789abcdef", true }, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.New(httpapi.Options{Store: store, OpenName: "ana"})
	runshift.Register(srv, in)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	for i := range 3 {
		n, cost, gated := int64(1000), 0.003, i != 1
		s := runshift.Signal{AMPVersion: "1.0", AgentID: "bot", RunID: fmt.Sprintf("run-%d", i), Status: "completed",
			Summary: "did", Model: "claude-sonnet-4-6", InputTokens: &n, OutputTokens: &n, CostUSD: &cost, GateRequired: &gated,
			StartedAt: "2026-03-06T22:10:38Z", CompletedAt: "2026-03-06T22:10:46Z"}
		action := "Deploy v1." + fmt.Sprint(i)
		s.ProposedAction = &action
		s.Artifacts = []json.RawMessage{json.RawMessage(`{"type":"text","content":"release notes"}`)}
		if _, err := in.Accept(ctx, runshift.Agent{ID: "bot"}, s); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"AMPFLOW_API_URL": ts.URL}
	r := run(t, "", env, nil, "gates", "list", "--status", "pending")
	if r.code != ExitOK || strings.Count(r.stdout, "pending") != 2 || !strings.Contains(r.stdout, "Deploy v1.2") || strings.Contains(r.stdout, "v1.1") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "", env, nil, "gates", "list", "--limit", "1", "-o", "json")
	var list []runshift.View
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || !strings.Contains(r.stderr, "next_cursor") {
		t.Fatalf("exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	id := runshift.GateID("bot", "run-1")
	r = run(t, "", env, nil, "gates", "show", id)
	if r.code != ExitOK || !strings.Contains(r.stdout, "approved (no gate fired)") || !strings.Contains(r.stdout, "Deploy v1.1") ||
		strings.Count(r.stdout, "agent history") != 2 || !strings.Contains(r.stdout, "text: release notes") || !strings.Contains(r.stdout, "run-2 pending") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "", env, nil, "gates", "show", "gate_nope")
	if r.code != ExitFailed || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "", env, nil, "gates", "list", "--status", "maybe"); r.code != ExitUsage {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
}

// TestGatesBudgetsCommands lists budgets and raises a spent one.
func TestGatesBudgetsCommands(t *testing.T) {
	ctx := context.Background()
	store, err := ssot.Open(ctx, filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := config.Default().Gate
	cfg.Agents = []config.GateAgent{{ID: "bot", KeyEnv: "K"}}
	p := config.Pricing{Budgets: []pricing.Budget{{Agent: "bot", Period: pricing.PeriodDay, USD: 0.001}}}
	in, err := runshift.NewIntake(cfg, p, store, func(_ context.Context, in gate.Input) (gate.Started, error) {
		return gate.Started{GateID: in.GateID}, nil
	}, func(string) (string, bool) { return "key-0123456789abcdef", true }, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.New(httpapi.Options{Store: store, OpenName: "ana"})
	runshift.Register(srv, in)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	n, cost, gated := int64(1000), 0.003, false
	s := runshift.Signal{AMPVersion: "1.0", AgentID: "bot", RunID: "run-1", Status: "completed",
		Summary: "did", Model: "claude-sonnet-4-6", InputTokens: &n, OutputTokens: &n, CostUSD: &cost, GateRequired: &gated,
		StartedAt: "2026-03-06T22:10:38Z", CompletedAt: "2026-03-06T22:10:46Z"}
	if _, err := in.Accept(ctx, runshift.Agent{ID: "bot"}, s); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AMPFLOW_API_URL": ts.URL}
	r := run(t, "", env, nil, "gates", "budgets")
	if r.code != ExitOK || !strings.Contains(r.stdout, "bot:*:day") || !strings.Contains(r.stdout, "exhausted") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "", env, nil, "gates", "budgets", "raise", "bot:*:day", "1", "--note", "release")
	if r.code != ExitOK || !strings.Contains(r.stdout, "raised bot:*:day by $1.0000") || !strings.Contains(r.stdout, "(ok)") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "", env, nil, "gates", "budgets", "raise", "bot:*:day", "-2"); r.code != ExitUsage {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	s.RunID = "run-2"
	if _, err := in.Accept(ctx, runshift.Agent{ID: "bot"}, s); err != nil {
		t.Fatalf("after the raise: %v", err)
	}
}
