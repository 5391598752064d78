package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp/task"
)

// ended waits until the task is done, terminated, suspended or waits for
// an admin.
func (s *runnerDev) ended(id string) task.State {
	return s.api.waitFor(id, "done", 5*time.Minute, func(st task.State) bool {
		return st.Status == task.StatusDone || st.Underlying() == task.StatusAwaitingAdmin ||
			st.Status == task.StatusTerminated || st.Status == task.StatusSuspended
	})
}

// checkClean asserts that the task left nothing behind: no worktree, no
// change in the user's checkout, which is still on main.
func (s *runnerDev) checkClean(t *testing.T, id string) {
	t.Helper()
	if head := git(t, s.repo, "rev-parse", "--abbrev-ref", "HEAD"); head != "main" {
		t.Errorf("the user's checkout moved to %s", head)
	}
	if status := git(t, s.repo, "status", "--porcelain"); status != "" {
		t.Errorf("the user's checkout changed:\n%s", status)
	}
	if _, err := os.Stat(filepath.Join(s.repo, "hello.txt")); err == nil {
		t.Error("the executor wrote into the user's checkout")
	}
	// The worktrees go as the task ends, just after its status says so.
	for _, dir := range []string{filepath.Join(s.p.dataDir, "worktrees", id), filepath.Join(s.p.dataDir, "worktrees", id+"-review")} {
		deadline := time.Now().Add(60 * time.Second)
		for _, err := os.Stat(dir); !os.IsNotExist(err); _, err = os.Stat(dir) {
			if time.Now().After(deadline) {
				t.Errorf("worktree %s is still there a minute after the task ended (%v); timeline: %+v", dir, err, s.api.state(id).Timeline)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if wts := git(t, s.repo, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Errorf("git still lists the task's worktrees:\n%s", wts)
	}
}

// codexCommit is a Codex tool call that writes hello.txt and commits it.
func codexCommit(text, msg string) fakemodel.Turn {
	return fakemodel.Turn{Text: "Writing the file.", Tool: &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{
		"cmd": "printf '" + text + "\\n' > hello.txt && git add hello.txt && git -c user.name=codex -c user.email=codex@example.com commit -qm '" + msg + "'"}}}
}

// TestRunnerTask runs a task from start to done with the real Codex CLI as
// executor and the real Claude Code CLI as reviewer, each against a
// loopback fake of its model API: Codex commits a file in the task's
// worktree, ampflow reads the result from git, Claude Code approves it,
// the worktrees go, and the user's own checkout is left as it was.
func TestRunnerTask(t *testing.T) {
	s := startRunnerDev(t, runnerOpts{
		executor: runner{"codex", []fakemodel.Turn{
			codexCommit("hello", "add hello.txt"),
			{Text: `Done. {"criteria_met": [true], "notes": ["hello.txt added"], "summary": "wrote hello.txt"}`},
		}},
		reviewer: runner{"claude", []fakemodel.Turn{
			{Text: `Looks right. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "hello.txt reads hello"}]}`},
		}},
	})
	out := s.p.output()
	if !strings.Contains(out, "executor   runner codex") || !strings.Contains(out, "reviewer   runner claude") {
		t.Errorf("dev did not say which runners it checked:\n%s", out)
	}
	const id = "T-2026-881"
	s.api.startTask(id, lowRiskPlan(s.repo))
	if st := s.ended(id); st.Status != task.StatusDone {
		t.Fatalf("task %s: status %s (%s), want done\n%s", id, st.Status, st.LastError, s.p.output())
	}

	commit := git(t, s.repo, "rev-parse", "feature/e2e")
	if got := git(t, s.repo, "show", "feature/e2e:hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the branch = %q", got)
	}
	s.checkClean(t, id)
	if b := git(t, s.repo, "branch", "--list", "ampflow/salvage/*"); b != "" {
		t.Errorf("salvage branches with nothing left uncommitted: %s", b)
	}
	// The tool's output reached the model, and the reviewer was told the
	// commit it reviewed.
	if reqs := s.executor.AgentRequests(); len(reqs) < 2 {
		t.Errorf("codex made %d model requests, want the tool result sent back", len(reqs))
	}
	reviewed := false
	for _, r := range s.reviewer.AgentRequests() {
		reviewed = reviewed || r.Text(commit)
	}
	if !reviewed {
		t.Error("the reviewer's prompt did not name the result commit")
	}
}
