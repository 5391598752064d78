package dashboard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

type fakeFleet struct {
	runs []RunnerRun
	err  error
}

func (f fakeFleet) Runs(context.Context) ([]RunnerRun, error) { return f.runs, f.err }

type fakeAccounts []AccountSpend

func (f fakeAccounts) AccountSpendToday() []AccountSpend { return f }

func TestRunnersPanel(t *testing.T) {
	f := newFixture(t, testTokens)
	now := t0.Add(time.Hour)
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	// The executor spent $0.50 today on T-2026-001; the reviewer's run was
	// yesterday's.
	if _, err := f.db.AppendTranscript(context.Background(), "T-2026-001", []ssot.TranscriptEntry{
		{Role: "executor", Run: 1, At: midnight.Add(time.Minute), Kind: ssot.TranscriptUsage, CostUSD: 0.5},
		{Role: "reviewer", Run: 1, At: midnight.Add(-time.Hour), Kind: ssot.TranscriptUsage, CostUSD: 2},
	}); err != nil {
		t.Fatal(err)
	}
	fleet := fakeFleet{runs: []RunnerRun{
		{Host: "build-1", TaskID: "T-2026-001", Role: "executor", Runner: "codex", Account: "team-b", Step: "Bash: go test ./...", Queued: now.Add(-5 * time.Minute), Started: now.Add(-4*time.Minute - 10*time.Second), CostUSD: 0.25},
		{Host: "build-1", TaskID: "T-2026-002", Role: "executor", Runner: "codex", Queued: now.Add(-time.Minute)},
	}}
	roles := []RunnerRole{{Role: "reviewer", Runner: "claude", Model: "sonnet", Accounts: []string{"r1", "r2"}}, {Role: "executor", Runner: "codex"}}
	accounts := fakeAccounts{{Role: "executor", Account: "team-a", USD: 0.125}, {Role: "executor", Account: "team-b", USD: 0.375}}
	f.srv.panels = map[string]Panel{PanelRunners: RunnersPanel(roles, fleet, f.db, accounts, func() time.Time { return now })}
	c := f.client(t)
	c.signIn("tok-exec")
	_, page := c.do("GET", "/agents", nil, nil)
	for _, want := range []string{`<h2 id="h-runners">Runner agents</h2>`,
		`data-label="State">busy<`, `<a href="/tasks/T-2026-001">T-2026-001</a>`, "Bash: go test ./... (run $0.2500)", `data-label="For">4m10s<`,
		`data-label="Host">build-1<`, `data-label="Spent today">$0.5000 (on this worker: team-a $0.1250, team-b $0.3750)<`,
		`data-label="Account">team-b<`, `data-label="Account">r1, r2<`,
		`data-label="State">waiting for a slot<`, `data-label="For">1m0s<`,
		`data-label="CLI">claude · sonnet<`, `data-label="State">idle<`, `data-label="Spent today">$0.0000<`,
		"<h2>Registered agents</h2>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the agents page lacks %q", want)
		}
	}
	if strings.Index(page, `data-label="Agent">executor<`) > strings.Index(page, `data-label="Agent">reviewer<`) {
		t.Error("the reviewer is listed before the executor")
	}

	f.srv.panels = map[string]Panel{PanelRunners: RunnersPanel(roles, fakeFleet{err: errors.New("store down")}, nil, nil, nil)}
	_, page = c.do("GET", "/agents", nil, nil)
	if !strings.Contains(page, "reading the fleet: store down") {
		t.Error("the agents page hides the fleet's error")
	}
	f.srv.panels = map[string]Panel{}
	_, page = c.do("GET", "/agents", nil, nil)
	if strings.Contains(page, "Runner agents") {
		t.Error("the agents page lists runner agents without a runners panel")
	}
}
