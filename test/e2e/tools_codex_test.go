package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
)

// TestToolPolicyCodex runs the real Codex CLI as executor against a fake
// model that uses the network: the PreToolUse hook ampflow gives it on
// its command line asks the admins, the admin approves over the API, and
// the command runs once.
func TestToolPolicyCodex(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "pong")
	}))
	t.Cleanup(target.Close)
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"codex", []fakemodel.Turn{
		{Text: "Checking the service.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "curl -s " + target.URL + "/"}}},
		codexCommit("hello", "add hello.txt"),
		{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "wrote hello.txt"}`},
	}}})
	ops, repo := s.api, s.repo
	const id = "T-2026-884"
	s.planner.startTask(id, lowRiskPlan(repo))

	d := ops.pending(id, task.KindToolCall, 3*time.Minute)
	if !strings.Contains(d.Prompt, "curl") {
		t.Errorf("the decision: %+v", d)
	}
	if hits.Load() != 0 {
		t.Error("curl ran before the admins answered")
	}
	calls := ops.toolCalls(id)
	if len(calls) != 1 || calls[0].Decision != task.ToolPending || calls[0].Rule != "ask-network" || calls[0].Tool != "Bash" || calls[0].Agent != "exec" {
		t.Fatalf("the tool calls before the answer: %+v", calls)
	}
	ops.decide(d, task.OptAllowOnce)
	st := ops.awaitResult(id, 3*time.Minute)
	if hits.Load() != 1 {
		t.Errorf("curl reached the target %d times after the approval, want 1", hits.Load())
	}
	if got := git(t, repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q (status %s, %s)", got, st.Status, st.LastError)
	}
	calls = ops.toolCalls(id)
	if len(calls) != 2 || calls[0].Decision != task.ToolAllow || calls[0].By != "ops" || calls[0].Kind != "shell" ||
		calls[1].Decision != task.ToolAllow || calls[1].By != task.ByPolicy {
		t.Errorf("the tool calls: %+v", calls)
	}
}
