// Package gittest makes git repositories for tests: real repositories in
// a test's temporary directory, with git isolated from the machine's own
// configuration.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Env isolates the tests' own git calls from the machine's config.
var Env = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
	"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	"GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
}

// Git runs git in dir and returns its trimmed stdout, failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// NewRepo creates a repository whose first branch is def, with one commit.
func NewRepo(t testing.TB, def string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q", "-b", def)
	CommitFiles(t, dir, "initial", map[string]string{"README.md": "hello\n", "lib/core.go": "package lib\n\nfunc A() {}\n"})
	return dir
}

// CommitFiles writes files (content "" deletes) and commits them on the
// current branch, returning the commit's hash.
func CommitFiles(t testing.TB, repo, msg string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(repo, name)
		if content == "" {
			Git(t, repo, "rm", "-q", name)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		Git(t, repo, "add", name)
	}
	Git(t, repo, "commit", "-q", "-m", msg)
	return Git(t, repo, "rev-parse", "HEAD")
}

// Lines is n lines of s.
func Lines(n int, s string) string { return strings.Repeat(s+"\n", n) }
