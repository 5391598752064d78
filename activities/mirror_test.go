package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/runner"
)

// urlRepo is a bare repository given by a file:// URL, and a clone of it
// to push new commits from.
func urlRepo(t *testing.T) (url, bare, work string) {
	t.Helper()
	work = gittest.NewRepo(t, "main")
	bare = filepath.Join(t.TempDir(), "app.git")
	gittest.Git(t, work, "clone", "-q", "--bare", work, bare)
	gittest.Git(t, work, "remote", "add", "origin", bare)
	return "file://" + bare, bare, work
}

func TestMirrorName(t *testing.T) {
	for url, prefix := range map[string]string{
		"file:///srv/git/app.git":           "app-",
		"https://github.com/acme/widget":    "widget-",
		"git@github.com:acme/widget.git":    "widget-",
		"ssh://git@host:22/acme/a b.git/":   "a-b-",
		"https://host/":                     "host-",
		"file:///srv/git/../../etc/app.git": "app-",
	} {
		if got := MirrorName(url); !strings.HasPrefix(got, prefix) || len(got) != len(prefix)+12 {
			t.Errorf("MirrorName(%q) = %q, want %s and 12 hex digits", url, got, prefix)
		}
	}
	if MirrorName("file:///a/app.git") == MirrorName("file:///b/app.git") {
		t.Error("two repositories of one name share a mirror")
	}
}

// TestMirror: a task on a repository given by URL works in the worker's
// mirror of it: made on first use, fetched when asked, its task branch
// made from the URL's default branch and pushed back there.
func TestMirror(t *testing.T) {
	ctx := context.Background()
	url, bare, work := urlRepo(t)
	first := gittest.Git(t, work, "rev-parse", "HEAD")
	g := &Git{Mirrors: filepath.Join(t.TempDir(), "repos")}

	if dir, err := g.Local(ctx, work, true); err != nil || dir != work {
		t.Fatalf("Local(path) = %q, %v; want the path itself", dir, err)
	}
	dir, err := g.Local(ctx, url, false)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != g.Mirrors {
		t.Fatalf("mirror at %s, want under %s", dir, g.Mirrors)
	}
	if got := gittest.Git(t, dir, "rev-parse", "refs/remotes/origin/main"); got != first {
		t.Errorf("a new mirror has origin/main at %s, want %s", got, first)
	}

	res, err := g.CheckBranch(ctx, CheckBranchInput{Repo: url, Branch: "ampflow/x", Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.DefaultBranch != "main" || res.Head != first {
		t.Errorf("CheckBranch = %+v, want main at %s", res, first)
	}
	if got := gittest.Git(t, dir, "rev-parse", "refs/heads/ampflow/x"); got != first {
		t.Errorf("task branch at %s, want %s", got, first)
	}

	second := gittest.CommitFiles(t, work, "more", map[string]string{"b.go": "package b\n"})
	gittest.Git(t, work, "push", "-q", "origin", "main")
	if _, err := g.Local(ctx, url, false); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, dir, "rev-parse", "refs/remotes/origin/main"); got != first {
		t.Errorf("Local without fetch moved origin/main to %s", got)
	}
	if _, err := g.Local(ctx, url, true); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"refs/remotes/origin/main", "refs/heads/main"} {
		if got := gittest.Git(t, dir, "rev-parse", ref); got != second {
			t.Errorf("after a fetch %s is at %s, want %s", ref, got, second)
		}
	}
	if got := gittest.Git(t, dir, "rev-parse", "refs/heads/ampflow/x"); got != first {
		t.Errorf("a fetch moved the task branch to %s", got)
	}

	t.Run("PushedBack", func(t *testing.T) {
		wt := filepath.Join(t.TempDir(), "wt")
		if err := runner.AddTaskWorktree(ctx, dir, wt, "ampflow/x"); err != nil {
			t.Fatal(err)
		}
		done := gittest.CommitFiles(t, wt, "task work", map[string]string{"c.go": "package c\n"})
		if err := runner.FetchBack(ctx, dir, wt, "ampflow/x"); err != nil {
			t.Fatal(err)
		}
		p := &Pusher{Git: g, Secrets: child.NewScrubber(nil)}
		target, err := p.Target(ctx, PushTargetInput{TaskID: "T-2026-001", Repo: url})
		if err != nil || target.URL != url {
			t.Fatalf("Target = %+v, %v; want %s", target, err, url)
		}
		if _, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: url, Branch: "ampflow/x", Remote: target.URL, Commit: done}); err != nil {
			t.Fatal(err)
		}
		if got := gittest.Git(t, bare, "rev-parse", "refs/heads/ampflow/x"); got != done {
			t.Errorf("the URL's branch is at %s, want %s", got, done)
		}
	})

	t.Run("BranchOnlyAtTheURL", func(t *testing.T) {
		gittest.Git(t, work, "push", "-q", "origin", "main:refs/heads/ampflow/theirs")
		res, err := g.CheckBranch(ctx, CheckBranchInput{Repo: url, Branch: "ampflow/theirs"})
		if err != nil || res.Head != second {
			t.Fatalf("CheckBranch = %+v, %v; want the URL's branch at %s", res, err, second)
		}
		if got := gittest.Git(t, dir, "rev-parse", "refs/heads/ampflow/theirs"); got != second {
			t.Errorf("the mirror's task branch is at %s, want the URL's %s", got, second)
		}
	})
}

// TestMirrorFetchedAtOnce: tasks that fetch one mirror at the same time
// all get it, made once.
func TestMirrorFetchedAtOnce(t *testing.T) {
	url, _, work := urlRepo(t)
	head := gittest.Git(t, work, "rev-parse", "HEAD")
	g := &Git{Mirrors: filepath.Join(t.TempDir(), "repos")}
	var wg sync.WaitGroup
	dirs, errs := make([]string, 6), make([]error, 6)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = g.Local(context.Background(), url, true)
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Errorf("fetch %d: %q, %v; want %q", i, dirs[i], errs[i], dirs[0])
		}
	}
	if got := gittest.Git(t, dirs[0], "rev-parse", "refs/remotes/origin/main"); got != head {
		t.Errorf("origin/main at %s, want %s", got, head)
	}
	if entries, _ := os.ReadDir(g.Mirrors); len(entries) != 1 {
		t.Errorf("%d mirrors, want 1", len(entries))
	}
}

// TestMirrorRunsNothing: making and fetching a mirror runs no hook, nor
// any program the URL's repository names.
func TestMirrorRunsNothing(t *testing.T) {
	url, bare, _ := urlRepo(t)
	marks := t.TempDir()
	script := func(name string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\ntouch "+filepath.Join(marks, name)+"\ncat >/dev/null\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gittest.Git(t, bare, "config", "uploadpack.packObjectsHook", script("pack-objects-hook"))
	g := &Git{Mirrors: filepath.Join(t.TempDir(), "repos")}
	dir, err := g.Local(context.Background(), url, false)
	if err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(dir, ".git", "hooks", "reference-transaction")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(script("reference-transaction"), hook); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, bare, "branch", "ampflow/new", "main")
	if _, err := g.Local(context.Background(), url, true); err != nil {
		t.Fatal(err)
	}
	if got := gittest.Git(t, dir, "rev-parse", "--verify", "-q", "refs/remotes/origin/ampflow/new"); got == "" {
		t.Fatal("the fetch took nothing")
	}
	if ran, _ := os.ReadDir(marks); len(ran) > 0 {
		t.Errorf("ran %v", ran)
	}
}
