package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
}

func TestAddTaskWorktree(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := newRepo(t)
	main := gitOut(t, repo, "rev-parse", "HEAD")
	base := t.TempDir()
	wt := filepath.Join(base, "task-1")

	t.Run("NewBranch", func(t *testing.T) {
		if err := AddTaskWorktree(ctx, repo, wt, "feature/one"); err != nil {
			t.Fatal(err)
		}
		if b := gitOut(t, wt, "branch", "--show-current"); b != "feature/one" {
			t.Errorf("branch %q", b)
		}
		if h := gitOut(t, wt, "rev-parse", "HEAD"); h != main {
			t.Errorf("new branch at %s, want the default branch's head %s", h, main)
		}
	})
	t.Run("Retry", func(t *testing.T) {
		if err := AddTaskWorktree(ctx, repo, wt, "feature/one"); err != nil {
			t.Fatalf("a retried add failed: %v", err)
		}
	})
	t.Run("CheckedOutElsewhere", func(t *testing.T) {
		err := AddTaskWorktree(ctx, repo, filepath.Join(base, "task-2"), "feature/one")
		if !errors.Is(err, ErrBranchCheckedOut) {
			t.Fatalf("err = %v, want ErrBranchCheckedOut", err)
		}
		if !strings.Contains(err.Error(), wt) || !strings.Contains(err.Error(), "it goes when that task ends") {
			t.Errorf("the error does not name the checkout that holds the branch: %v", err)
		}
		err = AddTaskWorktree(ctx, repo, filepath.Join(base, "task-3"), "main")
		if !errors.Is(err, ErrBranchCheckedOut) || !strings.Contains(err.Error(), repo) {
			t.Errorf("the user's own checkout: %v", err)
		}
	})
	t.Run("OwnCheckout", func(t *testing.T) {
		// The checkout is a clone: what is done in it moves none of the
		// repository's refs and writes none of its hooks, until FetchBack
		// brings the task's branch over.
		gitOut(t, wt, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "work")
		work := gitOut(t, wt, "rev-parse", "HEAD")
		gitOut(t, wt, "update-ref", "refs/heads/main", work)
		if err := os.WriteFile(filepath.Join(wt, ".git", "hooks", "post-checkout"), []byte("#!/bin/sh\ntouch hooked\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if got := gitOut(t, repo, "rev-parse", "main"); got != main {
			t.Errorf("the checkout moved the repository's main to %s", got)
		}
		if got := gitOut(t, repo, "rev-parse", "feature/one"); got != main {
			t.Errorf("the repository's feature/one moved before FetchBack: %s", got)
		}
		if _, err := os.Stat(filepath.Join(repo, ".git", "hooks", "post-checkout")); err == nil {
			t.Error("a hook written in the checkout is the repository's")
		}
		if err := FetchBack(ctx, repo, wt, "feature/one"); err != nil {
			t.Fatal(err)
		}
		if got := gitOut(t, repo, "rev-parse", "feature/one"); got != work {
			t.Errorf("after FetchBack feature/one is at %s, want the checkout's %s", got, work)
		}
		if got := gitOut(t, repo, "rev-parse", "main"); got != main {
			t.Errorf("FetchBack moved main to %s", got)
		}
		// The agent switches its checkout to a branch of its own: the
		// task's checkout is kept as it is on the next dispatch, and the
		// branch ampflow brings back is still the task's.
		gitOut(t, wt, "checkout", "-q", "-b", "release")
		gitOut(t, wt, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "on release")
		if err := AddTaskWorktree(ctx, repo, wt, "feature/one"); err != nil {
			t.Fatal(err)
		}
		if b := gitOut(t, wt, "branch", "--show-current"); b != "release" {
			t.Errorf("the next dispatch made the checkout again (on %q): the agent's work on release is gone", b)
		}
		if TaskBranch(wt) != "feature/one" {
			t.Errorf("TaskBranch = %q, want feature/one", TaskBranch(wt))
		}
	})
	t.Run("ExistingBranch", func(t *testing.T) {
		gitOut(t, repo, "branch", "existing", "HEAD")
		dir := filepath.Join(base, "task-4")
		if err := AddTaskWorktree(ctx, repo, dir, "existing"); err != nil {
			t.Fatal(err)
		}
		if b := gitOut(t, dir, "branch", "--show-current"); b != "existing" {
			t.Errorf("branch %q", b)
		}
	})
	t.Run("BadName", func(t *testing.T) {
		if err := AddTaskWorktree(ctx, repo, filepath.Join(base, "task-5"), "bad..name"); err == nil {
			t.Error("a bad branch name was accepted")
		}
	})
	t.Run("Remove", func(t *testing.T) {
		if err := RemoveWorktree(ctx, repo, wt); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(wt); !os.IsNotExist(err) {
			t.Errorf("worktree dir still there: %v", err)
		}
		if err := RemoveWorktree(ctx, repo, wt); err != nil {
			t.Errorf("removing twice: %v", err)
		}
		// The branch is free again.
		if err := AddTaskWorktree(ctx, repo, filepath.Join(base, "task-6"), "feature/one"); err != nil {
			t.Error(err)
		}
	})
}

func TestDefaultBranchFromOrigin(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	upstream := newRepo(t)
	gitOut(t, upstream, "switch", "-q", "-c", "trunk")
	gitOut(t, upstream, "commit", "-q", "--allow-empty", "-m", "on trunk")
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", upstream, clone).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	gitOut(t, clone, "switch", "-q", "-c", "local-work")
	gitOut(t, clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "local")
	branch, commit, err := DefaultBranch(ctx, clone)
	if err != nil {
		t.Fatal(err)
	}
	if want := gitOut(t, upstream, "rev-parse", "trunk"); branch != "trunk" || commit != want {
		t.Errorf("default branch %s at %s, want trunk at %s", branch, commit, want)
	}
}

// Concurrent adds on one repository are serialised, so none of them trips
// over git's own lock.
func TestAddTaskWorktreeConcurrent(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := newRepo(t)
	base := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = AddTaskWorktree(ctx, repo, filepath.Join(base, fmt.Sprint(i)), fmt.Sprintf("task-%d", i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("add %d: %v", i, err)
		}
	}
}

// TestAddTaskWorktreeOneBranchAtOnce: checkouts of one branch for
// several tasks at once, made outside the repository's lock: one gets
// it, the others are refused as a branch another checkout works on.
func TestAddTaskWorktreeOneBranchAtOnce(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := newRepo(t)
	base := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = AddTaskWorktree(ctx, repo, filepath.Join(base, fmt.Sprint(i)), "feature/shared")
		}()
	}
	wg.Wait()
	got := 0
	for i, err := range errs {
		switch {
		case err == nil:
			got++
		case !errors.Is(err, ErrBranchCheckedOut):
			t.Errorf("add %d: %v, want ErrBranchCheckedOut", i, err)
		}
	}
	if got != 1 {
		files, _ := filepath.Glob(filepath.Join(base, "*.branch"))
		t.Errorf("%d checkouts of one branch, want 1: %v; branch files %v", got, errs, files)
	}
}

func TestAddDetachedWorktree(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := newRepo(t)
	commit := gitOut(t, repo, "rev-parse", "HEAD")
	dir := filepath.Join(t.TempDir(), "review")
	if err := AddDetachedWorktree(ctx, repo, dir, commit); err != nil {
		t.Fatal(err)
	}
	if b := gitOut(t, dir, "branch", "--show-current"); b != "" {
		t.Errorf("on branch %q, want detached", b)
	}
	if err := AddDetachedWorktree(ctx, repo, dir, commit); err != nil {
		t.Errorf("a retried add failed: %v", err)
	}
	if err := AddDetachedWorktree(ctx, repo, filepath.Join(t.TempDir(), "x"), "no-such-commit"); err == nil {
		t.Error("a missing commit was accepted")
	}
}

func TestSalvage(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	if err := AddTaskWorktree(ctx, repo, wt, "task-7"); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(wt, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("Nothing", func(t *testing.T) {
		c, err := Salvage(ctx, wt, "", "")
		if err != nil || c != "" {
			t.Errorf("commit %q, err %v", c, err)
		}
	})
	t.Run("ToSalvageBranch", func(t *testing.T) {
		write("new.txt", "new\n")
		write("README", "changed\n")
		write(".gitignore", "*.log\n")
		write("debug.log", "ignored\n")
		head := gitOut(t, wt, "rev-parse", "HEAD")
		status := gitOut(t, wt, "status", "--porcelain")
		ref, err := NextSalvageRef(ctx, wt, "task-7")
		if err != nil || ref != "ampflow/salvage/task-7/1" {
			t.Fatalf("ref %q, err %v", ref, err)
		}
		c, err := Salvage(ctx, wt, ref, "salvage after a failed run")
		if err != nil || c == "" {
			t.Fatalf("commit %q, err %v", c, err)
		}
		if got := gitOut(t, wt, "rev-parse", ref); got != c {
			t.Errorf("%s at %s, want %s", ref, got, c)
		}
		if files := gitOut(t, wt, "show", "--name-only", "--format=", c); files != ".gitignore\nREADME\nnew.txt" {
			t.Errorf("salvage commit holds %q", files)
		}
		if p := gitOut(t, wt, "rev-parse", c+"^"); p != head {
			t.Errorf("salvage parent %s, want %s", p, head)
		}
		// The worktree, its branch and its index are as they were.
		if h := gitOut(t, wt, "rev-parse", "HEAD"); h != head {
			t.Error("the branch moved")
		}
		if s := gitOut(t, wt, "status", "--porcelain"); s != status {
			t.Errorf("status changed:\n%s\nwant\n%s", s, status)
		}
		if next, _ := NextSalvageRef(ctx, wt, "task-7"); next != "ampflow/salvage/task-7/2" {
			t.Errorf("next salvage ref %q", next)
		}
	})
	t.Run("ToBranch", func(t *testing.T) {
		if err := os.Remove(filepath.Join(wt, "README")); err != nil {
			t.Fatal(err)
		}
		c, err := Salvage(ctx, wt, "", "")
		if err != nil || c == "" {
			t.Fatalf("commit %q, err %v", c, err)
		}
		if h := gitOut(t, wt, "rev-parse", "task-7"); h != c {
			t.Errorf("branch at %s, want %s", h, c)
		}
		if s := gitOut(t, wt, "status", "--porcelain"); s != "" {
			t.Errorf("left uncommitted: %q", s)
		}
		if _, err := os.Stat(filepath.Join(wt, "debug.log")); err != nil {
			t.Error("the ignored file went")
		}
		if files := gitOut(t, wt, "ls-tree", "--name-only", "HEAD"); strings.Contains(files, "README") || strings.Contains(files, "debug.log") {
			t.Errorf("tree %q", files)
		}
	})
}

func TestSalvageTask(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := newRepo(t)
	wt := filepath.Join(t.TempDir(), "T-1")
	if err := AddTaskWorktree(ctx, repo, wt, "feature/s"); err != nil {
		t.Fatal(err)
	}
	if ref, c, err := SalvageTask(ctx, wt, "T-1", ""); err != nil || ref != "" || c != "" {
		t.Fatalf("a clean worktree: %q %q %v, want nothing salvaged", ref, c, err)
	}
	if err := os.WriteFile(filepath.Join(wt, "left.txt"), []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, c, err := SalvageTask(ctx, wt, "T-1", "")
	if err != nil || ref != SalvageRef("T-1", 1) || c == "" {
		t.Fatalf("SalvageTask = %q %q %v, want %s", ref, c, err, SalvageRef("T-1", 1))
	}
	if err := FetchBack(ctx, repo, wt, ref); err != nil {
		t.Fatal(err)
	}
	if got := gitOut(t, repo, "show", ref+":left.txt"); got != "draft" {
		t.Errorf("left.txt on %s = %q", ref, got)
	}
	// The same work again, as from a retry: no second branch.
	ref2, c2, err := SalvageTask(ctx, wt, "T-1", "")
	if err != nil || ref2 != ref || c2 != c {
		t.Errorf("salvaging the same work again = %q %q %v, want %s %s", ref2, c2, err, ref, c)
	}
	if err := os.WriteFile(filepath.Join(wt, "left.txt"), []byte("more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ref3, _, err := SalvageTask(ctx, wt, "T-1", ""); err != nil || ref3 != SalvageRef("T-1", 2) {
		t.Errorf("new work = %q %v, want %s", ref3, err, SalvageRef("T-1", 2))
	}
	if b := gitOut(t, wt, "branch", "--show-current"); b != "feature/s" {
		t.Errorf("the worktree moved to %q", b)
	}
}

func TestBranchWorktree(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := newRepo(t)
	if p, err := BranchWorktree(ctx, repo, "main"); err != nil || !samePath(p, repo) {
		t.Errorf("main: %q %v, want the main checkout %s", p, err, repo)
	}
	if p, err := BranchWorktree(ctx, repo, "nowhere"); err != nil || p != "" {
		t.Errorf("a branch checked out nowhere: %q %v", p, err)
	}
}
