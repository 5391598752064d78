package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/toolhook"
	"github.com/ampflow/ampflow/amp/task"
)

// TestHookPark: a runner's hook (AMPFLOW_PARK_FILE set) whose ask is still
// open at its ask_timeout parks the call: it writes the park file naming
// it, and Claude Code is told to defer the call; Codex's hook holds the
// call until the runner stops the CLI (here, toolhook.ParkHold) and then denies it.
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
	// claude is the hook's input with a transcript of the lines given
	// (none: no transcript file).
	claude := func(t *testing.T, lines ...string) string {
		var in map[string]any
		if err := json.Unmarshal([]byte(readHookInput(t, "claude_pretooluse.json")), &in); err != nil {
			t.Fatal(err)
		}
		in["transcript_path"] = filepath.Join(t.TempDir(), "session.jsonl")
		if len(lines) > 0 {
			if err := os.WriteFile(in["transcript_path"].(string), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := json.Marshal(in)
		return string(b)
	}
	shortHold := func(t *testing.T) {
		old := toolhook.ParkHold
		toolhook.ParkHold = 200 * time.Millisecond
		t.Cleanup(func() { toolhook.ParkHold = old })
	}
	const (
		user = `{"type":"user","message":{"role":"user","content":"push it"}}`
		// Claude Code writes a message one content block a line.
		text    = `{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Pushing."}]}}`
		push    = `{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_fake2","name":"Bash","input":{"command":"git push --force origin main"}}]}}`
		sibling = `{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_fake3","name":"Bash","input":{"command":"rm -rf build"}}]}}`
		earlier = `{"type":"assistant","message":{"id":"msg_0","role":"assistant","content":[{"type":"tool_use","id":"toolu_fake1","name":"Read","input":{"file_path":"a"}},{"type":"tool_use","id":"toolu_fake0","name":"Read","input":{"file_path":"b"}}]}}`
	)
	deferred := func(t *testing.T, r result, file string) {
		t.Helper()
		if r.code != ExitOK || !strings.Contains(r.stdout, `"permissionDecision":"defer"`) || !strings.Contains(r.stdout, "parked") {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if b, _ := os.ReadFile(file); strings.Contains(string(b), `"hold"`) {
			t.Errorf("a deferred call's park file asks to stop the CLI: %s", b)
		}
	}
	held := func(t *testing.T, r result, file string) {
		t.Helper()
		if r.code != ExitOK || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) || !strings.Contains(r.stdout, "parked") {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if b, _ := os.ReadFile(file); !strings.Contains(string(b), `"hold":true`) {
			t.Errorf("a held call's park file does not ask to stop the CLI: %s", b)
		}
	}
	t.Run("ClaudeDefers", func(t *testing.T) {
		r, file := park(t, "claude", claude(t, user, earlier, text, push))
		deferred(t, r, file)
	})
	t.Run("ClaudeHeldBesideAnotherCall", func(t *testing.T) {
		// Claude Code ignores a defer beside another call of its message.
		shortHold(t)
		r, file := park(t, "claude", claude(t, user, text, sibling, push))
		held(t, r, file)
	})
	t.Run("ClaudeHeldWithoutTranscript", func(t *testing.T) {
		shortHold(t)
		r, file := park(t, "claude", claude(t))
		held(t, r, file)
	})
	t.Run("ClaudeHeldWhenTheCallIsNotInTheTranscript", func(t *testing.T) {
		shortHold(t)
		r, file := park(t, "claude", claude(t, user, earlier))
		held(t, r, file)
	})
	t.Run("CodexHeldThenDenied", func(t *testing.T) {
		shortHold(t)
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
