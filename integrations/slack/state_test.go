package slack

import (
	"os"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/chat"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
	"github.com/ampflow/ampflow/workflows/decision"
)

func TestStatePrunesAndPersists(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	old, fresh, open := chattest.PlanDecision(), chattest.LockDecision(), chattest.PlanDecision()
	open.ID = "T-2026-001-d2"
	o := chattest.Outcome(old, decision.OptApprove, "slack:U1", "slack", "")
	err = s.Update(now, func(d *stateData) {
		d.Decisions[old.ID] = &posted{Decision: old, Outcome: &o, ClosedAt: now.Add(-chat.KeepDecided - time.Hour)}
		d.Decisions[fresh.ID] = &posted{Decision: fresh, Outcome: &o, ClosedAt: now.Add(-time.Hour)}
		d.Decisions[open.ID] = &posted{Decision: open}
		d.Buttons["old"] = button{DecisionID: old.ID, Option: decision.OptApprove}
		d.Buttons["open"] = button{DecisionID: open.ID, Option: decision.OptApprove}
		d.Notices["stale"] = now.Add(-chat.KeepNotices - time.Hour)
		d.Notices["recent"] = now
	})
	if err != nil {
		t.Fatal(err)
	}
	again, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var d *stateData
	again.View(func(s *stateData) { d = s })
	if d.Decisions[old.ID] != nil || d.Decisions[fresh.ID] == nil || d.Decisions[open.ID] == nil {
		t.Errorf("decisions kept: %v; want the fresh and the open one", keys(d.Decisions))
	}
	if _, ok := d.Buttons["old"]; ok {
		t.Error("a pruned decision's button survived")
	}
	if _, ok := d.Buttons["open"]; !ok {
		t.Error("an open decision's button was pruned")
	}
	if _, ok := d.Notices["stale"]; ok || len(d.Notices) != 1 {
		t.Errorf("notices kept: %v", d.Notices)
	}
	fi, err := os.Stat(s.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("state dir holds %d files, want just the state (no temp files left)", len(entries))
	}
}

func TestStateRefusesCorruptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/"+StateFile, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore(dir); err == nil {
		t.Error("a corrupt state file was accepted; posts would be repeated")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
