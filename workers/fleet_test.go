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

// The Agents page reads the runs of the live hosts only.
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
	} {
		if err := db.SaveHost(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	got, err := dashboardFleet{db}.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Host != "live" || got[0].TaskID != "T-2026-001" || got[0].Role != "executor" || !got[0].Started.Equal(started) || got[0].Step != "Bash" {
		t.Errorf("runs %+v, want the live host's one run", got)
	}
}
