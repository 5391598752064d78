package activities

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/activities/gittest"
)

func TestPushOverHTTPWithToken(t *testing.T) {
	const token = "ghs_SECRETtoken123"
	bare, clone := githubtest.Origin(t)
	gitURL := githubtest.GitHTTP(t, filepath.Dir(bare), token)
	remote := gitURL + "/" + filepath.Base(bare)
	gittest.Git(t, clone, "checkout", "-q", "-b", "feature/x")
	head := gittest.CommitFiles(t, clone, "work", map[string]string{"a.go": "package a\n"})
	// A hook the executor left must not run (it could read the token).
	hook := filepath.Join(clone, ".git", "hooks", "pre-push")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\nenv > "+filepath.Join(t.TempDir(), "leak")+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := &Pusher{Git: &Git{}, Token: token, Secrets: child.NewScrubber([]string{token})}

	target, err := p.Target(ctx, PushTargetInput{TaskID: "T-2026-001", Repo: clone})
	if err != nil || target.URL != bare {
		t.Fatalf("Target = %+v, %v; want %s", target, err, bare)
	}
	res, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/x", Remote: remote, Commit: head[:10]})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != head || res.Already {
		t.Errorf("push = %+v", res)
	}
	if got := githubtest.Git(t, bare, "rev-parse", "refs/heads/feature/x"); got != head {
		t.Errorf("remote branch at %s, want %s", got, head)
	}
	// A retry after the push went through does nothing.
	if res, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/x", Remote: remote, Commit: head}); err != nil || !res.Already {
		t.Errorf("second push = %+v, %v; want already there", res, err)
	}

	t.Run("RebaseWithLease", func(t *testing.T) {
		gittest.Git(t, clone, "commit", "-q", "--amend", "-m", "reworded")
		amended := gittest.Git(t, clone, "rev-parse", "HEAD")
		if _, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/x", Remote: remote, Commit: amended}); err == nil {
			t.Fatal("a non-fast-forward push without a lease went through")
		}
		if _, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/x", Remote: remote, Commit: amended, Lease: head}); err != nil {
			t.Fatal(err)
		}
		// A stale lease (someone else pushed) is refused for good.
		_, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/x", Remote: remote, Commit: head, Lease: head})
		appErr(t, err, ErrPush, true)
	})

	t.Run("WrongToken", func(t *testing.T) {
		bad := &Pusher{Git: &Git{}, Token: "wrong", Secrets: child.NewScrubber([]string{"wrong"})}
		_, err := bad.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/y", Remote: remote, Commit: head})
		if err == nil {
			t.Fatal("a push with a wrong token went through")
		}
	})

	t.Run("RepositoryConfigChangesNothing", func(t *testing.T) {
		// The repository rewrites the remote's URL (to a host that is not
		// there) and sets a push URL: the push goes from a clean
		// repository of its own, to the task's remote, and lands.
		t.Setenv("TMPDIR", t.TempDir())
		gittest.Git(t, clone, "config", "url.http://127.0.0.1:1/.insteadOf", gitURL+"/")
		gittest.Git(t, clone, "config", "remote.origin.pushurl", "http://127.0.0.1:1/elsewhere.git")
		defer gittest.Git(t, clone, "config", "--unset", "url.http://127.0.0.1:1/.insteadOf")
		defer gittest.Git(t, clone, "config", "--unset", "remote.origin.pushurl")
		if _, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: clone, Branch: "feature/z", Remote: remote, Commit: head}); err != nil {
			t.Fatalf("the repository's configuration redirected the push: %v", err)
		}
		if got := githubtest.Git(t, bare, "rev-parse", "refs/heads/feature/z"); got != head {
			t.Errorf("remote feature/z at %s, want %s", got, head)
		}
		if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "ampflow-push-*")); len(left) != 0 {
			t.Errorf("push repositories left behind: %v", left)
		}
	})

	// The token is on no file of the repository or the remote.
	for _, dir := range []string{clone, bare} {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if b, _ := os.ReadFile(path); strings.Contains(string(b), token) {
				t.Errorf("%s holds the token", path)
			}
			return nil
		})
	}
}

func TestCredentialHelperHasNoToken(t *testing.T) {
	if strings.Contains(credentialHelper, "ghs_") || !strings.Contains(credentialHelper, "$"+tokenVar) {
		t.Errorf("helper %q", credentialHelper)
	}
}
