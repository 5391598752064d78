package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// runnerAgents is the Deliverer of runnerActivities: it delivers nothing
// and names its roles' agents as delivery.Delivery does.
type runnerAgents struct {
	Deliverer
	Executor, Reviewer AgentDelivery
}

func (r *runnerAgents) RunnerAgent(role amp.Role) (AgentDelivery, bool) {
	a := r.Executor
	if role == amp.RoleReviewer {
		a = r.Reviewer
	}
	return a, a.Mode == config.AgentModeRunner && a.WorkDir != ""
}

func runnerActivities(t *testing.T, mode string) (*Activities, string) {
	t.Helper()
	data := t.TempDir()
	d := &runnerAgents{Executor: AgentDelivery{Mode: mode, Runner: "codex", WorkDir: data},
		Reviewer: AgentDelivery{Mode: mode, Runner: "claude", WorkDir: data}}
	return &Activities{Git: &Git{}, Delivery: d}, data
}

func TestCleanupWorktrees(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t, "main")
	acts, data := runnerActivities(t, config.AgentModeRunner)
	const id = "T-2026-001"
	wt := WorktreeDir(data, id, amp.RoleExecutor)
	review := WorktreeDir(data, id, amp.RoleReviewer)
	if err := runner.AddTaskWorktree(ctx, repo, wt, "feature/x"); err != nil {
		t.Fatal(err)
	}
	if err := runner.AddDetachedWorktree(ctx, repo, review, "main"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "draft.txt"), []byte("unfinished\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(data, "sessions", id+".executor.codex")
	if err := os.MkdirAll(filepath.Dir(session), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(session, []byte("thread-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	res, err := acts.CleanupWorktrees(ctx, CleanupWorktreesInput{TaskID: id, Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	if res.Salvaged != runner.SalvageRef(id, 1) {
		t.Errorf("salvaged to %q, want %s", res.Salvaged, runner.SalvageRef(id, 1))
	}
	if got := gittest.Git(t, repo, "show", res.Salvaged+":draft.txt"); got != "unfinished" {
		t.Errorf("draft.txt on the salvage branch = %q", got)
	}
	for _, dir := range []string{wt, review} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", dir, err)
		}
	}
	if wts := gittest.Git(t, repo, "worktree", "list"); strings.Count(wts, "\n") != 0 {
		t.Errorf("git still lists worktrees:\n%s", wts)
	}
	if _, err := os.Stat(session); !os.IsNotExist(err) {
		t.Errorf("the session file is still there (%v)", err)
	}
	if b := gittest.Git(t, repo, "rev-parse", "--abbrev-ref", "HEAD"); b != "main" {
		t.Errorf("the user's checkout is on %s", b)
	}

	t.Run("Again", func(t *testing.T) {
		res, err := acts.CleanupWorktrees(ctx, CleanupWorktreesInput{TaskID: id, Repo: repo})
		if err != nil || res.Salvaged != "" || len(res.Removed) != 0 {
			t.Errorf("a second run = %+v, %v; want nothing done", res, err)
		}
		if out := gittest.Git(t, repo, "branch", "--list", "ampflow/salvage/*"); strings.Count(out, "\n") != 0 {
			t.Errorf("salvage branches:\n%s", out)
		}
	})
	t.Run("NotAWorktree", func(t *testing.T) {
		// A leftover directory inside the user's repository is not taken
		// for the task's worktree.
		acts, _ := runnerActivities(t, config.AgentModeRunner)
		acts.Delivery.(*runnerAgents).Executor.WorkDir = filepath.Join(repo, ".ampflow")
		dir := WorktreeDir(filepath.Join(repo, ".ampflow"), id, amp.RoleExecutor)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("edited by the user\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := acts.CleanupWorktrees(ctx, CleanupWorktreesInput{TaskID: id, Repo: repo})
		if err != nil || res.Salvaged != "" || len(res.Removed) != 0 {
			t.Errorf("= %+v, %v; want nothing done", res, err)
		}
	})
	t.Run("NotRunner", func(t *testing.T) {
		acts, data := runnerActivities(t, config.AgentModeCommand)
		wt := WorktreeDir(data, id, amp.RoleExecutor)
		if err := runner.AddTaskWorktree(ctx, repo, wt, "feature/y"); err != nil {
			t.Fatal(err)
		}
		if res, err := acts.CleanupWorktrees(ctx, CleanupWorktreesInput{TaskID: id, Repo: repo}); err != nil || len(res.Removed) != 0 {
			t.Errorf("= %+v, %v; want nothing done without a runner", res, err)
		}
	})
}

func TestCheckBranchRunner(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t, "main")
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/x")

	t.Run("CheckedOutByTheUser", func(t *testing.T) {
		acts, _ := runnerActivities(t, config.AgentModeRunner)
		_, err := acts.CheckBranch(ctx, CheckBranchInput{Repo: repo, Branch: "feature/x"})
		ae := appErr(t, err, ErrBranchCheckedOut, true)
		for _, want := range []string{repo, "switch --detach", "worktree remove"} {
			if !strings.Contains(ae.Error(), want) {
				t.Errorf("the refusal does not name %q: %v", want, ae)
			}
		}
	})
	t.Run("CommandMode", func(t *testing.T) {
		acts, _ := runnerActivities(t, config.AgentModeCommand)
		if _, err := acts.CheckBranch(ctx, CheckBranchInput{Repo: repo, Branch: "feature/x"}); err != nil {
			t.Errorf("a command-mode executor works in the user's checkout: %v", err)
		}
	})
	gittest.Git(t, repo, "checkout", "-q", "main")
	t.Run("Free", func(t *testing.T) {
		acts, _ := runnerActivities(t, config.AgentModeRunner)
		if _, err := acts.CheckBranch(ctx, CheckBranchInput{Repo: repo, Branch: "feature/x"}); err != nil {
			t.Error(err)
		}
	})
	t.Run("AnotherTasksWorktree", func(t *testing.T) {
		acts, data := runnerActivities(t, config.AgentModeRunner)
		wt := WorktreeDir(data, "T-2026-002", amp.RoleExecutor)
		if err := runner.AddTaskWorktree(ctx, repo, wt, "feature/x"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = runner.RemoveWorktree(ctx, repo, wt) })
		if _, err := acts.CheckBranch(ctx, CheckBranchInput{Repo: repo, Branch: "feature/x"}); err != nil {
			t.Errorf("a task queued behind another on its branch is refused: %v", err)
		}
	})
}

// memMarks is WorktreeMarks in memory.
type memMarks map[string]ssot.WorktreeMark

func (m memMarks) MarkWorktree(_ context.Context, w ssot.WorktreeMark) error {
	m[w.Path] = w
	return nil
}
func (m memMarks) WorktreeMarked(_ context.Context, p string) (bool, error) {
	_, ok := m[p]
	return ok, nil
}
func (m memMarks) UnmarkWorktree(_ context.Context, p string) error { delete(m, p); return nil }
func (m memMarks) MarkedWorktrees(context.Context, int) ([]ssot.WorktreeMark, error) {
	var out []ssot.WorktreeMark
	for _, w := range m {
		out = append(out, w)
	}
	return out, nil
}

// TestCleanupWorktreesNeverInvents: a checkout a stopped removal left is
// finished off with nothing salvaged, and one that would delete files no
// run deleted is refused and left on disk.
func TestCleanupWorktreesNeverInvents(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*Activities, memMarks, string, string) {
		repo := gittest.NewRepo(t, "main")
		gittest.CommitFiles(t, repo, "files", map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
		acts, data := runnerActivities(t, config.AgentModeRunner)
		marks := memMarks{}
		acts.Marks = marks
		wt := WorktreeDir(data, "T-2026-002", amp.RoleExecutor)
		if err := runner.AddTaskWorktree(ctx, repo, wt, "feature/y"); err != nil {
			t.Fatal(err)
		}
		if err := runner.NoteRunEnd(ctx, wt, "task_dispatch-T-2026-002-1"); err != nil {
			t.Fatal(err)
		}
		// Half removed: tracked files gone that the run left in place.
		os.Remove(filepath.Join(wt, "a.txt"))
		os.Remove(filepath.Join(wt, "b.txt"))
		return acts, marks, repo, wt
	}
	noSalvage := func(t *testing.T, repo string) {
		if out := gittest.Git(t, repo, "branch", "--list", "ampflow/salvage/*"); out != "" {
			t.Errorf("salvage branches %q", out)
		}
	}
	t.Run("Marked", func(t *testing.T) {
		acts, marks, repo, wt := setup(t)
		marks[wt] = ssot.WorktreeMark{Path: wt, TaskID: "T-2026-002"}
		res, err := acts.CleanupWorktrees(ctx, CleanupWorktreesInput{TaskID: "T-2026-002", Repo: repo})
		if err != nil || !res.Finished || res.Salvaged != "" {
			t.Fatalf("CleanupWorktrees = %+v, %v; want finished with no salvage", res, err)
		}
		noSalvage(t, repo)
		if _, err := os.Stat(wt); !os.IsNotExist(err) || len(marks) != 0 {
			t.Errorf("checkout %v, marks %v; want both gone", err, marks)
		}
	})
	t.Run("Unaccounted", func(t *testing.T) {
		acts, marks, repo, wt := setup(t)
		res, err := acts.CleanupWorktrees(ctx, CleanupWorktreesInput{TaskID: "T-2026-002", Repo: repo})
		if err != nil || res.Salvaged != "" || !strings.Contains(res.Refused, "would delete 2 tracked files (a.txt, b.txt)") {
			t.Fatalf("CleanupWorktrees = %+v, %v; want the salvage refused", res, err)
		}
		noSalvage(t, repo)
		if _, err := os.Stat(filepath.Join(wt, ".git")); err != nil || len(marks) != 0 {
			t.Errorf("checkout %v, marks %v; want it left on disk, unmarked", err, marks)
		}
	})
}
