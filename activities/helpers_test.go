package activities

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/ssot"
)

// testGitEnv isolates the tests' own git calls from the machine's config.
var testGitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
	"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	"GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
}

// gitT runs git in dir and returns its trimmed stdout, failing the test on error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), testGitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo creates a repository whose first branch is def, with one commit.
func newRepo(t testing.TB, def string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q", "-b", def)
	commitFiles(t, dir, "initial", map[string]string{"README.md": "hello\n", "lib/core.go": "package lib\n\nfunc A() {}\n"})
	return dir
}

// commitFiles writes files (content "" deletes) and commits them on the
// current branch, returning the commit's hash.
func commitFiles(t testing.TB, repo, msg string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(repo, name)
		if content == "" {
			gitT(t, repo, "rm", "-q", name)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gitT(t, repo, "add", name)
	}
	gitT(t, repo, "commit", "-q", "-m", msg)
	return gitT(t, repo, "rev-parse", "HEAD")
}

// appErr asserts err is a Temporal application error of the given type.
func appErr(t testing.TB, err error, typ string, nonRetryable bool) *temporal.ApplicationError {
	t.Helper()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an application error of type %s", err, err, typ)
	}
	if ae.Type() != typ {
		t.Fatalf("error type = %q, want %q (%v)", ae.Type(), typ, err)
	}
	if ae.NonRetryable() != nonRetryable {
		t.Fatalf("error %v: non-retryable = %v, want %v", err, ae.NonRetryable(), nonRetryable)
	}
	return ae
}

// newSSOT opens a fresh SQL SSOT on SQLite in a temporary directory.
func newSSOT(t testing.TB) *TaskRecord {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &TaskRecord{Store: db}
}

func lines(n int, s string) string { return strings.Repeat(s+"\n", n) }

func entry(id string, kind ssot.RecordKind, body string) RecordEntry {
	return RecordEntry{ID: id, Kind: kind, Body: json.RawMessage(body)}
}
