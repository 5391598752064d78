package activities

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
)

// The batch answers as a new git would: refs moved, made, packed and
// deleted after it started, and commits in packs written since.
func TestGitBatchSeesChanges(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	base := gittest.Git(t, repo, "rev-parse", "HEAD")
	g := &Git{}
	ctx := context.Background()
	head := func(branch string) string {
		t.Helper()
		refs, err := g.readRefs(ctx, repo, branch)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := refs.head(repo, branch)
		return h
	}
	if got := head("feature/a"); got != "" {
		t.Fatalf("feature/a before it exists: %s", got)
	}
	b, err := batches.get(g.bin(), repo)
	if err != nil {
		t.Fatal(err)
	}
	pid := b.cmd.Process.Pid

	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/a")
	c1 := gittest.CommitFiles(t, repo, "one", map[string]string{"a.txt": "a\n"})
	if got := head("feature/a"); got != c1 {
		t.Errorf("feature/a made after the batch started: %q, want %s", got, c1)
	}
	gittest.Git(t, repo, "pack-refs", "--all")
	c2 := gittest.CommitFiles(t, repo, "two", map[string]string{"a.txt": "b\n"})
	gittest.Git(t, repo, "repack", "-a", "-d", "-q")
	if got := head("feature/a"); got != c2 {
		t.Errorf("feature/a moved after packing: %q, want %s", got, c2)
	}
	if !g.descends(ctx, repo, base, c2, 8) || g.descends(ctx, repo, c2, base, 8) {
		t.Errorf("descends: base → %s wrong", ShortHash(c2))
	}
	gittest.Git(t, repo, "checkout", "-q", "main")
	gittest.Git(t, repo, "branch", "-D", "-q", "feature/a")
	if got := head("feature/a"); got != "" {
		t.Errorf("feature/a deleted: %s", got)
	}
	if b2, _ := batches.get(g.bin(), repo); b2.cmd.Process.Pid != pid {
		t.Errorf("the batch was restarted: pid %d, then %d", pid, b2.cmd.Process.Pid)
	}
}

// A batch whose git died is replaced, and the request that found it dead
// is answered by a git of its own.
func TestGitBatchDies(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	main := gittest.Git(t, repo, "rev-parse", "HEAD")
	g := &Git{}
	ctx := context.Background()
	if _, err := g.readRefs(ctx, repo, "main"); err != nil {
		t.Fatal(err)
	}
	b, err := batches.get(g.bin(), repo)
	if err != nil {
		t.Fatal(err)
	}
	b.cmd.Process.Kill()
	for i := range 2 {
		refs, err := g.readRefs(ctx, repo)
		if err != nil {
			t.Fatalf("read %d after the kill: %v", i+1, err)
		}
		if got, _ := refs.head(repo, "main"); got != main {
			t.Errorf("read %d after the kill: main at %q, want %s", i+1, got, main)
		}
	}
	if b2, _ := batches.get(g.bin(), repo); b2 == b || b2.dead {
		t.Error("the dead batch is still the repository's")
	}
}

// isAncestor walks a short way and leaves the rest to merge-base: both
// answer alike.
func TestIsAncestorWalk(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	base := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/long")
	var tip string
	for i := range ancestorWalk + 6 {
		tip = gittest.CommitFiles(t, repo, "c", map[string]string{"n.txt": strings.Repeat("x", i+1) + "\n"})
	}
	gittest.Git(t, repo, "checkout", "-q", "--orphan", "other")
	other := gittest.CommitFiles(t, repo, "root", map[string]string{"o.txt": "o\n"})
	g := &Git{}
	ctx := context.Background()
	if g.descends(ctx, repo, base, tip, ancestorWalk) {
		t.Errorf("descends found a commit %d back within %d", ancestorWalk+6, ancestorWalk)
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{{base, tip, true}, {tip, base, false}, {other, tip, false}, {base, other, false}} {
		err := g.isAncestor(ctx, repo, tc.a, tc.b, &ancestry{})
		if got := err == nil; got != tc.want || (err != nil && !exitCode1(err)) {
			t.Errorf("isAncestor(%s, %s) = %v, want ancestor %v", ShortHash(tc.a), ShortHash(tc.b), err, tc.want)
		}
	}
}

// A repository removed and made again at the same path gets a new batch:
// the old one would go on reading the removed directory.
func TestGitBatchRepoReplaced(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	g := &Git{}
	ctx := context.Background()
	if _, err := g.readRefs(ctx, repo, "feature/x"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "init", "-q", "-b", "main")
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/x")
	want := gittest.CommitFiles(t, repo, "again", map[string]string{"x.txt": "x\n"})
	refs, err := g.readRefs(ctx, repo, "feature/x")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := refs.head(repo, "feature/x"); got != want {
		t.Errorf("feature/x of the new repository: %q, want %s", got, want)
	}
}
