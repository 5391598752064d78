package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/activities/gittest"
)

// TestBranchFromRemote: a branch of a clone whose origin is behind a
// token is made at the head its target has on origin, which holds work
// the clone's own main lacks; the clone's main stays, no hook runs, and
// a retry finds the branch made.
func TestBranchFromRemote(t *testing.T) {
	const token = "ghs_BRANCHtoken123"
	ctx := context.Background()
	bare, clone := githubtest.Origin(t)
	remote := githubtest.GitHTTP(t, filepath.Dir(bare), token) + "/" + filepath.Base(bare)
	gittest.Git(t, clone, "remote", "set-url", "origin", remote)
	localMain := gittest.Git(t, clone, "rev-parse", "main")
	moved := pushMain(t, bare, map[string]string{"merged.txt": "merged\n"})
	ran := filepath.Join(t.TempDir(), "ran")
	hook := "#!/bin/sh\ntouch " + ran + "\n"
	for _, h := range []string{"reference-transaction", "post-checkout"} {
		if err := os.WriteFile(filepath.Join(clone, ".git", "hooks", h), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := &Pusher{Git: &Git{}, Token: token, Secrets: child.NewScrubber([]string{token})}
	in := BranchFromInput{Repo: clone, Branch: "goal/G-1/b", From: "main"}

	res, err := p.BranchFromRemote(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Head != moved || res.FromHead != moved || !res.Created || res.From != "main" {
		t.Fatalf("branch from the remote's main = %+v; want made at %s", res, moved)
	}
	if got := gittest.Git(t, clone, "show", "goal/G-1/b:merged.txt"); got != "merged" {
		t.Errorf("the branch has merged.txt %q", got)
	}
	if got := gittest.Git(t, clone, "rev-parse", "main"); got != localMain {
		t.Errorf("the clone's main moved to %s", got)
	}
	if refs := gittest.Git(t, clone, "for-each-ref", "refs/ampflow/"); refs != "" {
		t.Errorf("refs left in the clone: %s", refs)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a hook of the clone ran")
	}

	pushMain(t, bare, map[string]string{"later.txt": "later\n"})
	again, err := p.BranchFromRemote(ctx, in)
	if err != nil || again.Head != moved || again.Created {
		t.Errorf("retry = %+v, %v; want the branch made before, at %s", again, err, moved)
	}

	p.Token = "ghs_wrong"
	if _, err := p.BranchFromRemote(ctx, BranchFromInput{Repo: clone, Branch: "goal/G-1/c", From: "main"}); err == nil {
		t.Error("a branch made though the remote refused the token")
	}
}
