package workers

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/dashboard"
)

func TestRunnerRoles(t *testing.T) {
	cfg := config.Default()
	cfg.Agents.Executor = config.Agent{Mode: config.AgentModeRunner, Runner: "codex", Model: "gpt-5",
		Accounts: []config.Account{{Name: "a", Env: []string{"OPENAI_API_KEY=$KEY_A"}}, {Name: "b", Env: []string{"OPENAI_API_KEY=$KEY_B"}}}}
	cfg.Agents.Reviewer = config.Agent{Mode: config.AgentModePull}
	got := runnerRoles(cfg)
	if len(got) != 1 || !reflect.DeepEqual(got[0], dashboard.RunnerRole{Role: "executor", Runner: "codex", Model: "gpt-5", Accounts: []string{"a", "b"}}) {
		t.Errorf("runner roles %+v, want the executor's only", got)
	}
}

// The Agents page reads the runs of the live hosts only for its runner
// agents, and lists every host of the last hour, alive or gone.
func TestDashboardFleet(t *testing.T) {
	ctx := context.Background()
	db, err := ssot.Open(ctx, filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	started := now.Add(-time.Minute).UTC().Truncate(time.Second)
	runs := func(task string) json.RawMessage {
		return json.RawMessage(`{"running":[{"task_id":"` + task + `","role":"executor","runner":"codex","priority":0,"queued_at":"` +
			started.Format(time.RFC3339) + `","started_at":"` + started.Format(time.RFC3339) + `","step":"Bash","cost_usd":0.1,"for_seconds":0}],"queue":[]}`)
	}
	for _, h := range []ssot.Host{
		{Host: "live", Slots: 2, Runs: runs("T-2026-001"), StartedAt: now.Add(-time.Hour), SeenAt: now},
		{Host: "gone", Slots: 2, Runs: runs("T-2026-002"), StartedAt: now.Add(-time.Hour), SeenAt: now.Add(-10 * time.Minute)},
		{Host: "old", Slots: 2, Runs: runs("T-2026-004"), StartedAt: now.Add(-3 * time.Hour), SeenAt: now.Add(-2 * time.Hour)},
		{Host: "queued", Slots: 1, StartedAt: now.Add(-time.Hour), SeenAt: now, Runs: json.RawMessage(`{"running":[],"queue":[{"task_id":"T-2026-003",` +
			`"role":"reviewer","runner":"claude","priority":7,"queued_at":"` + started.Format(time.RFC3339) + `","cost_usd":0,"for_seconds":0}]}`)},
	} {
		if err := db.SaveHost(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	got, err := dashboardFleet{db}.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Host != "live" || got[0].TaskID != "T-2026-001" || got[0].Role != "executor" || !got[0].Started.Equal(started) || got[0].Step != "Bash" ||
		got[1].Host != "queued" || got[1].TaskID != "T-2026-003" || !got[1].Started.IsZero() {
		t.Errorf("runs %+v, want the live hosts' run and queued run", got)
	}

	hosts, err := dashboardFleet{db}.Hosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 3 {
		t.Fatalf("hosts %+v, want gone, live and queued", hosts)
	}
	gone, live, queued := hosts[0], hosts[1], hosts[2]
	if gone.Host != "gone" || gone.Alive || len(gone.Running) != 1 || gone.Running[0].TaskID != "T-2026-002" {
		t.Errorf("host %+v, want gone with its last run", gone)
	}
	if live.Host != "live" || !live.Alive || live.Slots != 2 || live.InUse != 1 || len(live.Running) != 1 || live.Running[0].CostUSD != 0.1 || len(live.Queue) != 0 {
		t.Errorf("host %+v, want live with one of two slots in use", live)
	}
	if queued.Host != "queued" || !queued.Alive || queued.InUse != 0 || len(queued.Queue) != 1 || queued.Queue[0].Priority != 7 ||
		queued.Queue[0].Runner != "claude" || !queued.Queue[0].Queued.Equal(started) {
		t.Errorf("host %+v, want one run queued with priority 7", queued)
	}
}
