package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPullRequestDocsExample loads the configuration docs/pull-requests.md
// shows, with its token variable set.
func TestPullRequestDocsExample(t *testing.T) {
	raw, err := os.ReadFile("../docs/pull-requests.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(raw), "```yaml\n")
	if len(blocks) < 2 {
		t.Fatal("no yaml block in docs/pull-requests.md")
	}
	yaml, _, _ := strings.Cut(blocks[1], "```")
	file := filepath.Join(t.TempDir(), "ampflow.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_TOKEN", "ghs_docs")
	cfg, err := LoadEnv(New(), file, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg.CI.GitHub.Token = "ghs_docs"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d := cfg.Delivery
	if !d.Push || d.PullRequest != PullDraft || d.Merge != MergeSquash || d.GitHub.Token() != "ghs_docs" || d.GitHub.Approvals != 1 {
		t.Errorf("delivery %+v", d)
	}
	found := false
	for _, s := range cfg.Secrets() {
		found = found || s == "ghs_docs"
	}
	if !found {
		t.Error("Secrets() lacks the delivery token")
	}
}
