package runner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// commitOn commits file with body on branch of repo, checked out for it.
func commitOn(t *testing.T, repo, branch, file, body string) string {
	t.Helper()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("checkout", "-q", branch)
	if err := os.WriteFile(filepath.Join(repo, file), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", file)
	run("commit", "-q", "-m", "edit "+file)
	run("checkout", "-q", "--detach")
	return gitOut(t, repo, "rev-parse", "HEAD")
}

func TestRebaseAndMove(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := newRepo(t)
	gitOut(t, repo, "branch", "task")
	gitOut(t, repo, "branch", "other")
	head := commitOn(t, repo, "task", "a.txt", "a\n")
	base := commitOn(t, repo, "main", "b.txt", "b\n")
	ref := "refs/ampflow/queue/T-1"

	res, err := Rebase(ctx, repo, filepath.Join(t.TempDir(), "c"), "task", "main", ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.Base != base || res.Head != head || res.Rebased == "" || len(res.Conflicts) > 0 {
		t.Fatalf("rebase: %+v", res)
	}
	if got := gitOut(t, repo, "rev-parse", ref); got != res.Rebased {
		t.Errorf("%s is at %s, want %s", ref, got, res.Rebased)
	}
	if parent := gitOut(t, repo, "rev-parse", res.Rebased+"^"); parent != base {
		t.Errorf("the rebased commit's parent is %s, want main's head %s", parent, base)
	}

	t.Run("MovedOnce", func(t *testing.T) {
		m, err := MoveTarget(ctx, repo, "main", base, res.Rebased, "task", head, ref)
		if err != nil || m.Already || m.Moved || m.Head != res.Rebased {
			t.Fatalf("move: %+v %v", m, err)
		}
		// A retry, as after a worker killed past the move: nothing moves twice.
		again, err := MoveTarget(ctx, repo, "main", base, res.Rebased, "task", head, ref)
		if err != nil || !again.Already || again.Head != res.Rebased {
			t.Fatalf("retried move: %+v %v", again, err)
		}
		for _, b := range []string{"main", "task"} {
			if got := gitOut(t, repo, "rev-parse", "refs/heads/"+b); got != res.Rebased {
				t.Errorf("%s at %s, want %s", b, got, res.Rebased)
			}
		}
		if n := gitOut(t, repo, "rev-list", "--count", base+"..main"); n != "1" {
			t.Errorf("main is %s commits past its old head, want 1", n)
		}
	})

	t.Run("TargetMovedUnder", func(t *testing.T) {
		m, err := MoveTarget(ctx, repo, "main", base, "0123456789012345678901234567890123456789", "other", "", "")
		if err != nil || !m.Moved || m.Head != res.Rebased {
			t.Fatalf("move: %+v %v", m, err)
		}
	})

	t.Run("Conflict", func(t *testing.T) {
		commitOn(t, repo, "other", "b.txt", "other\n")
		c, err := Rebase(ctx, repo, filepath.Join(t.TempDir(), "c"), "other", "main", "refs/ampflow/queue/T-2")
		if err != nil || c.Rebased != "" || !slices.Equal(c.Conflicts, []string{"b.txt"}) {
			t.Fatalf("rebase: %+v %v", c, err)
		}
	})

	t.Run("Repoint", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "T-1")
		if err := AddTaskWorktree(ctx, repo, dir, "other"); err != nil {
			t.Fatal(err)
		}
		if ok, err := Repoint(ctx, dir, "task", res.Rebased); ok || err != nil {
			t.Errorf("a checkout of another branch repointed: %v %v", ok, err)
		}
		if ok, err := Repoint(ctx, dir, "other", res.Rebased); !ok || err != nil || gitOut(t, dir, "rev-parse", "HEAD") != res.Rebased {
			t.Errorf("repoint: %v %v", ok, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "README"), []byte("changed\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if ok, err := Repoint(ctx, dir, "other", base); ok || err != nil {
			t.Errorf("a checkout with changes repointed: %v %v", ok, err)
		}
	})

	t.Run("TargetCheckedOut", func(t *testing.T) {
		gitOut(t, repo, "checkout", "-q", "main")
		_, err := MoveTarget(ctx, repo, "main", res.Rebased, head, "task", res.Rebased, "")
		if !errors.Is(err, ErrTargetCheckedOut) {
			t.Fatalf("move of a checked-out target: %v", err)
		}
	})
}
