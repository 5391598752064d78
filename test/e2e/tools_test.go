package e2e

import (
	"encoding/json"
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

// TestToolPolicyClaude runs the real Claude Code as executor against a
// fake model that force-pushes, then uses the network, then commits: the
// PreToolUse hook ampflow gives it denies the force push without asking
// (the reason reaches the model), asks the admins about curl (approved
// over the API, the command runs), and every call is in the task's chain,
// made with the executor's own token.
func TestToolPolicyClaude(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "pong")
	}))
	t.Cleanup(target.Close)
	bash := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run it"}}
	}
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"claude", []fakemodel.Turn{
		{Text: "Pushing.", Tool: bash("git push --force origin main")},
		{Text: "Checking the service.", Tool: bash("curl -s " + target.URL + "/")},
		{Text: "Writing the file.", Tool: bash("printf 'hello\\n' > hello.txt && git add hello.txt && git -c user.name=claude -c user.email=claude@example.com commit -qm 'add hello.txt'")},
		{Text: `Done. {"criteria_met": [true], "notes": ["hello.txt added"], "summary": "wrote hello.txt"}`},
	}}})
	p, model, ops, repo := s.p, s.executor, s.api, s.repo
	const id = "T-2026-882"
	s.planner.startTask(id, lowRiskPlan(repo))

	// The curl is asked: a tool_call decision, the force push already
	// denied by then.
	d := ops.pending(id, task.KindToolCall, 3*time.Minute)
	if !strings.Contains(d.Prompt, "curl") || len(d.Options) != 3 || d.Options[2].ID != task.OptDeny || !d.Options[2].NoteRequired {
		t.Errorf("the decision: %+v", d)
	}
	if hits.Load() != 0 {
		t.Error("curl ran before the admins answered")
	}
	calls := ops.toolCalls(id)
	if len(calls) < 2 || calls[0].Decision != task.ToolDeny || calls[0].Rule != "no-force-push" || calls[0].By != task.ByPolicy ||
		calls[0].Agent != "exec" || calls[1].Decision != task.ToolPending || calls[1].Rule != "ask-network" {
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
	// The deny's reason reached the model in its next request.
	reqs := model.AgentRequests()
	if len(reqs) < 2 || !reqs[1].Text("force pushes are not allowed") {
		t.Errorf("the model was not told why the force push was denied (%d requests)", len(reqs))
	}

	calls = ops.toolCalls(id)
	if len(calls) != 3 {
		t.Fatalf("%d tool calls, want 3: %+v", len(calls), calls)
	}
	if c := calls[1]; c.Decision != task.ToolAllow || c.By != "ops" || c.Option != task.OptAllowOnce || c.Rule != "ask-network" || c.Kind != "shell" {
		t.Errorf("the asked call: %+v", c)
	}
	if c := calls[2]; c.Decision != task.ToolAllow || c.By != task.ByPolicy || c.Rule != "" || !strings.Contains(c.Input, "hello.txt") {
		t.Errorf("the commit: %+v", c)
	}
	// The CLI lists them too, filtered.
	out, stderr, code := cliAs(t, p, opsToken, nil, "task", "tools", id, "--decision", "deny", "-o", "json")
	var denied []task.ToolCall
	if code != 0 || json.Unmarshal([]byte(out), &denied) != nil || len(denied) != 1 || denied[0].Rule != "no-force-push" {
		t.Errorf("ampflow task tools --decision deny: exit %d\n%s%s", code, out, stderr)
	}
}
