package activities

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/config"
)

// TestGitInTaskRepoSeesNoSecrets: the executor writes the task's
// repository, .git/config included, so a smudge filter it sets up runs
// whenever ampflow checks the commit out for CI. That filter, and any
// other program git starts there, must see none of the worker's secrets.
func TestGitInTaskRepoSeesNoSecrets(t *testing.T) {
	t.Setenv("AMPFLOW_CI_GITHUB_TOKEN", "ghp-parent-s3cr3t")
	repo := gittest.NewRepo(t, "main")
	repo, _ = filepath.EvalSymlinks(repo)
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/x")
	loot := filepath.Join(t.TempDir(), "loot")
	gittest.Git(t, repo, "config", "filter.x.smudge", "sh -c 'env > "+loot+"; cat'")
	gittest.Git(t, repo, "config", "filter.x.clean", "cat")
	head := gittest.CommitFiles(t, repo, "work", map[string]string{".gitattributes": "*.txt filter=x\n", "a.txt": "a\n"})

	ci, err := NewCIProvider(config.ProviderCommand, CIOptions{Command: []string{"true"}, Store: newSSOT(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ci.Status(context.Background(), CIStatusInput{TaskID: "T-2026-001", Repo: repo, Commit: head}); err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(loot)
	if err != nil {
		t.Fatalf("the filter did not run, so the test shows nothing: %v", err)
	}
	if strings.Contains(string(env), "s3cr3t") || strings.Contains(string(env), "AMPFLOW_") {
		t.Errorf("git's filter saw the worker's environment:\n%s", env)
	}
	if !strings.Contains(string(env), "PATH=") {
		t.Errorf("git's filter got no PATH:\n%s", env)
	}
}
