package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
)

// TestToolPolicyCodexDeny runs the real Codex CLI as executor against a
// fake model that force-pushes: the PreToolUse hook ampflow gives it
// denies the call without asking, the command does not run, the rule's
// reason reaches the model as the call's function_call_output, Codex
// carries on, and the denied call is in the task's chain.
func TestToolPolicyCodexDeny(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pushed")
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"codex", []fakemodel.Turn{
		{Text: "Pushing.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{
			"cmd": "git push --force origin main; echo ran > " + marker}}},
		codexCommit("hello", "add hello.txt"),
		{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt"}`},
	}}})
	model, ops, repo := s.executor, s.api, s.repo
	const id = "T-2026-885"
	s.planner.startTask(id, lowRiskPlan(repo))

	st := task.State{}
	eventually(t, 3*time.Minute, "the executor's result", func() (bool, error) {
		if code, b := ops.call("GET", "/v1/tasks/"+id, nil, &st); code != http.StatusOK {
			return false, fmt.Errorf("%d %s", code, b)
		}
		if st.Pending != nil && st.Pending.Kind == task.KindToolCall {
			t.Fatalf("the force push was asked about, not denied: %+v", st.Pending)
		}
		return st.Underlying() != task.StatusDispatched && st.Underlying() != task.StatusInProgress, fmt.Errorf("status %s", st.Status)
	})
	if _, err := os.Stat(marker); err == nil {
		t.Error("the denied command ran")
	}
	if got := git(t, repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q (status %s, %s): Codex did not carry on after the deny", got, st.Status, st.LastError)
	}

	// The reason reached the model as the output of the denied call.
	reqs := model.AgentRequests()
	if len(reqs) < 2 {
		t.Fatalf("the model got %d requests", len(reqs))
	}
	if out, ok := functionCallOutput(t, reqs[1].Body); !ok || !strings.Contains(out, "force pushes are not allowed") {
		t.Errorf("the request after the push carries function_call_output %q (found %v), want the rule's reason", out, ok)
	}

	calls := ops.toolCalls(id)
	if len(calls) != 2 {
		t.Fatalf("%d tool calls, want 2: %+v", len(calls), calls)
	}
	if c := calls[0]; c.Decision != task.ToolDeny || c.By != task.ByPolicy || c.Rule != "no-force-push" || c.Tool != "Bash" ||
		c.Kind != "shell" || c.Agent != "exec" || c.DecisionID != "" || !strings.Contains(c.Input, "git push --force origin main") {
		t.Errorf("the denied call: %+v", c)
	}
	if c := calls[1]; c.Decision != task.ToolAllow || c.By != task.ByPolicy {
		t.Errorf("the commit: %+v", c)
	}
}

// functionCallOutput is the output of the first function_call_output
// item of a Responses API request's input, as text.
func functionCallOutput(t *testing.T, body []byte) (string, bool) {
	t.Helper()
	var req struct {
		Input []struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("reading a Responses API request: %v", err)
	}
	for _, it := range req.Input {
		if it.Type != "function_call_output" {
			continue
		}
		var s string
		if json.Unmarshal(it.Output, &s) == nil {
			return s, true
		}
		return string(it.Output), true // a list of content parts
	}
	return "", false
}
