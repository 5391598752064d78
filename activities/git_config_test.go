package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
)

// TestConfigKept: readConfig starts no git while the files the
// configuration comes from are as they were, and reads it again when the
// repository's, or the user's, changes; a configuration that includes
// another file is read every time.
func TestConfigKept(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	repo := gittest.NewRepo(t, "main")
	gittest.Git(t, repo, "config", "remote.origin.url", "https://github.com/acme/widget.git")
	gittest.Git(t, repo, "config", "init.defaultBranch", "trunk")
	bin, calls := countingGit(t)
	g := &Git{Bin: bin}
	ctx := context.Background()
	read := func(name string, want repoConfig, processes int) {
		t.Helper()
		got, err := g.readConfig(ctx, repo)
		if err != nil || got != want {
			t.Errorf("%s: read %+v, %v; want %+v", name, got, err, want)
		}
		if n := len(calls()); n != processes {
			t.Errorf("%s: %d git processes, want %d", name, n, processes)
		}
	}
	read("first", repoConfig{initDefault: "trunk", originURL: "https://github.com/acme/widget.git"}, 1)
	read("again", repoConfig{initDefault: "trunk", originURL: "https://github.com/acme/widget.git"}, 0)

	gittest.Git(t, repo, "config", "init.defaultBranch", "develop")
	read("repository changed", repoConfig{initDefault: "develop", originURL: "https://github.com/acme/widget.git"}, 1)

	gittest.Git(t, repo, "config", "--unset", "init.defaultBranch")
	calls()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[init]\n\tdefaultBranch = stable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read("user's made", repoConfig{initDefault: "stable", originURL: "https://github.com/acme/widget.git"}, 1)
	read("user's kept", repoConfig{initDefault: "stable", originURL: "https://github.com/acme/widget.git"}, 0)

	other := filepath.Join(t.TempDir(), "other.cfg")
	if err := os.WriteFile(other, []byte("[remote \"origin\"]\n\turl = https://github.com/acme/other.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "config", "include.path", other)
	calls()
	read("include", repoConfig{initDefault: "stable", originURL: "https://github.com/acme/other.git"}, 1)
	if err := os.WriteFile(other, []byte("[remote \"origin\"]\n\turl = https://github.com/acme/third.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read("included file changed", repoConfig{initDefault: "stable", originURL: "https://github.com/acme/third.git"}, 1)
}
