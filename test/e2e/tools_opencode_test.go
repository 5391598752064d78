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

// TestToolPolicyOpenCode runs the real OpenCode as executor against a fake
// model that force-pushes, uses the network, then commits: the plugin
// ampflow hands it (tool.execute.before, running `ampflow hook opencode`)
// denies the force push without asking (the reason reaches the model as
// the tool's error, the command does not run), asks the admins about curl
// (approved over the API, the command runs once), lets the commit run,
// and every call is in the task's chain, made with the executor's token.
func TestToolPolicyOpenCode(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "pong")
	}))
	t.Cleanup(target.Close)
	bash := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": cmd, "description": "run it"}}
	}
	s := startRunnerDev(t, runnerOpts{tokens: true, executor: runner{"opencode", []fakemodel.Turn{
		{Text: "Pushing.", Tool: bash("git push --force origin main; touch force-ran")},
		{Text: "Checking the service.", Tool: bash("curl -s " + target.URL + "/")},
		{Text: "Writing the file.", Tool: bash("printf 'hello\\n' > hello.txt && git add hello.txt && git -c user.name=opencode -c user.email=opencode@example.com commit -qm 'add hello.txt'")},
		{Text: `Done. {"criteria_met": [true], "notes": ["hello.txt added"], "summary": "wrote hello.txt"}`},
	}}})
	model, ops, repo := s.executor, s.api, s.repo
	const id = "T-2026-886"
	s.planner.startTask(id, lowRiskPlan(repo))

	d := ops.pending(id, task.KindToolCall, 4*time.Minute)
	if !strings.Contains(d.Prompt, "curl") {
		t.Errorf("the decision: %+v", d)
	}
	if hits.Load() != 0 {
		t.Error("curl ran before the admins answered")
	}
	calls := ops.toolCalls(id)
	if len(calls) != 2 || calls[0].Decision != task.ToolDeny || calls[0].Rule != "no-force-push" || calls[0].By != task.ByPolicy ||
		calls[0].Agent != "exec" || calls[0].Tool != "bash" || calls[0].Kind != "shell" ||
		calls[1].Decision != task.ToolPending || calls[1].Rule != "ask-network" {
		t.Fatalf("the tool calls before the answer: %+v", calls)
	}
	ops.decide(d, task.OptAllowOnce)
	st := ops.awaitResult(id, 4*time.Minute)
	if hits.Load() != 1 {
		t.Errorf("curl reached the target %d times after the approval, want 1", hits.Load())
	}
	if got := git(t, repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q (status %s, %s)", got, st.Status, st.LastError)
	}
	// ampflow commits what a run leaves behind: the denied command's file
	// would be on the branch had it run.
	if files := git(t, repo, "ls-tree", "--name-only", "feature/e2e"); strings.Contains(files, "force-ran") {
		t.Error("the denied force push ran")
	}
	reqs := model.AgentRequests()
	if len(reqs) < 2 || !reqs[1].Text("force pushes are not allowed") {
		t.Errorf("the model was not told why the force push was denied (%d requests)", len(reqs))
	}
	calls = ops.toolCalls(id)
	if len(calls) != 3 {
		t.Fatalf("%d tool calls, want 3: %+v", len(calls), calls)
	}
	if c := calls[1]; c.Decision != task.ToolAllow || c.By != "ops" || c.Option != task.OptAllowOnce || c.Rule != "ask-network" {
		t.Errorf("the asked call: %+v", c)
	}
	if c := calls[2]; c.Decision != task.ToolAllow || c.By != task.ByPolicy || !strings.Contains(c.Input, "hello.txt") {
		t.Errorf("the commit: %+v", c)
	}
}

// TestToolParkOpenCode parks an OpenCode run (the runner stops its process
// group once the plugin's hook, given AMPFLOW_PARK_FILE in OpenCode's
// environment, parks the call) and approves: --session resumes it, the
// agent makes the call again, and the hook finds it allowed.
func TestToolParkOpenCode(t *testing.T) {
	bash := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": cmd, "description": "run it"}}
	}
	testParkedApproval(t, parkCase{
		id: "T-2026-949", cli: "opencode", resumed: 1,
		turns: func(curl string) []fakemodel.Turn {
			return []fakemodel.Turn{
				{Text: "Checking the service.", Tool: bash(curl)},
				// The resumed run, told the call is allowed, makes it again.
				{Text: "Approved; running it again.", Tool: bash(curl)},
				{Text: "Committing.", Tool: bash("git add pong.txt && git -c user.name=opencode -c user.email=opencode@example.com commit -qm 'add pong.txt'")},
				{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "fetched pong.txt"}`},
			}
		},
	})
}
