package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
)

// rootOnlyDataDir is a data_dir Gemini CLI reads a system settings file
// from: it skips one that is not root's or sits under a directory others
// can write (t.TempDir under /tmp is such), so the test makes one under
// the user's cache directory and skips when that cannot be.
func rootOnlyDataDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("Gemini CLI reads ampflow's hook settings only from a root-owned data_dir")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Skip(err)
	}
	dir, err := os.MkdirTemp(cache, "ampflow-e2e-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for p := dir; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			t.Skip(err)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Uid != 0 || st.Mode().Perm()&0o022 != 0 {
			t.Skipf("%s is not root's alone: Gemini CLI would skip the hook's settings", p)
		}
		if filepath.Dir(p) == p {
			return dir
		}
	}
}

// TestToolPolicyGemini runs the real Gemini CLI as executor against a
// fake model that force-pushes, then commits: the BeforeTool hook ampflow
// hands it in a system settings file denies the force push without asking
// (the reason reaches the model, the command does not run), lets the
// commit run, and both calls are in the task's chain, made with the
// executor's own token.
func TestToolPolicyGemini(t *testing.T) {
	data := rootOnlyDataDir(t)
	shell := func(cmd string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "run_shell_command", Input: map[string]any{"command": cmd}}
	}
	s := startRunnerDev(t, runnerOpts{tokens: true, data: data, executor: runner{"gemini", []fakemodel.Turn{
		{Text: "Pushing.", Tool: shell("git push --force origin main; touch force-ran")},
		{Text: "Writing the file.", Tool: shell("printf 'hello\\n' > hello.txt && git add hello.txt && git -c user.name=gemini -c user.email=gemini@example.com commit -qm 'add hello.txt'")},
		{Text: `Done. {"criteria_met": [true], "notes": ["hello.txt added"], "summary": "wrote hello.txt"}`},
	}}})
	model, ops, repo := s.executor, s.api, s.repo
	const id = "T-2026-885"
	s.planner.startTask(id, lowRiskPlan(repo))

	st := ops.awaitResult(id, 4*time.Minute)
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
	calls := ops.toolCalls(id)
	if len(calls) != 2 {
		t.Fatalf("%d tool calls, want 2: %+v", len(calls), calls)
	}
	if c := calls[0]; c.Decision != task.ToolDeny || c.Rule != "no-force-push" || c.By != task.ByPolicy || c.Agent != "exec" ||
		c.Tool != "run_shell_command" || c.Kind != "shell" {
		t.Errorf("the force push: %+v", c)
	}
	if c := calls[1]; c.Decision != task.ToolAllow || c.By != task.ByPolicy || !strings.Contains(c.Input, "hello.txt") {
		t.Errorf("the commit: %+v", c)
	}
}
