package githubtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Origin makes a bare repository with a main branch of one commit, and a
// clone of it whose origin it is. It returns both paths.
func Origin(t testing.TB) (bare, clone string) {
	t.Helper()
	dir := t.TempDir()
	bare, clone = filepath.Join(dir, "origin.git"), filepath.Join(dir, "work")
	Git(t, dir, "init", "-q", "--bare", "-b", "main", bare)
	Git(t, dir, "clone", "-q", bare, clone)
	if err := os.WriteFile(filepath.Join(clone, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, clone, "add", ".")
	Git(t, clone, "commit", "-q", "-m", "initial")
	Git(t, clone, "push", "-q", "origin", "HEAD:refs/heads/main")
	Git(t, clone, "remote", "set-head", "origin", "main")
	return bare, clone
}

// Git runs git in dir with a fixed identity and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
