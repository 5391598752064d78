package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/workflows/task"
)

// TestHookPark: a runner's hook (AMPFLOW_PARK_FILE set) whose ask is still
// open at its ask_timeout parks the call: it writes the park file naming
// it, and Claude Code is told to defer the call; Codex's hook holds the
// call until the runner stops the CLI (here, parkHold) and then denies it.
func TestHookPark(t *testing.T) {
	pending := task.ToolCall{ID: "T-2026-001-tc4", Decision: task.ToolPending, AskTimeout: 300 * time.Millisecond}
	park := func(t *testing.T, cli, payload string) (result, string) {
		f := &fakeToolAPI{first: pending, then: pending}
		file := filepath.Join(t.TempDir(), "parks", "T-2026-001.executor."+cli+".json")
		env := map[string]string{"AMPFLOW_API_URL": f.serve(t), "AMPFLOW_TASK_ID": "T-2026-001", "AMPFLOW_PARK_FILE": file}
		r := run(t, payload, env, nil, "hook", cli)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("no park file: %v (%s %s)", err, r.stdout, r.stderr)
		}
		var p struct {
			ToolCall string `json:"tool_call"`
		}
		if json.Unmarshal(b, &p) != nil || p.ToolCall != pending.ID {
			t.Errorf("park file %s", b)
		}
		return r, file
	}
	t.Run("ClaudeDefers", func(t *testing.T) {
		r, _ := park(t, "claude", readHookInput(t, "claude_pretooluse.json"))
		if r.code != ExitOK || !strings.Contains(r.stdout, `"permissionDecision":"defer"`) || !strings.Contains(r.stdout, "parked") {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("CodexHeldThenDenied", func(t *testing.T) {
		old := parkHold
		parkHold = 200 * time.Millisecond
		t.Cleanup(func() { parkHold = old })
		r, _ := park(t, "codex", readHookInput(t, "claude_pretooluse.json"))
		if r.code != ExitOK || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) || !strings.Contains(r.stdout, "parked") {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("NoParkFileWaits", func(t *testing.T) {
		// A hook run by hand is not parked: it waits for the answer.
		f := &fakeToolAPI{first: pending, then: task.ToolCall{ID: pending.ID, Decision: task.ToolAllow, By: "ops", Channel: "api"}}
		env := map[string]string{"AMPFLOW_API_URL": f.serve(t), "AMPFLOW_TASK_ID": "T-2026-001"}
		r := run(t, readHookInput(t, "claude_pretooluse.json"), env, nil, "hook", "claude")
		if r.code != ExitOK || !strings.Contains(r.stdout, `"permissionDecision":"allow"`) {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})
}
