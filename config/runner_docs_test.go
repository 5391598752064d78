package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunnerDocsExamples loads the runner configurations the README and
// docs/runners.md show, so neither drifts from the keys ampflow knows.
func TestRunnerDocsExamples(t *testing.T) {
	for _, page := range []string{"../README.md", "../docs/runners.md"} {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, block := range strings.Split(string(raw), "```yaml\n")[1:] {
			yaml, _, _ := strings.Cut(block, "```")
			if !strings.Contains(yaml, "mode: runner") {
				continue
			}
			n++
			file := filepath.Join(t.TempDir(), "ampflow.yaml")
			if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadEnv(New(), file, nil)
			if err != nil {
				t.Errorf("%s: %v\n%s", page, err, yaml)
				continue
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("%s: %v\n%s", page, err, yaml)
			}
			if cfg.Agents.Executor.Mode != AgentModeRunner || cfg.Agents.Reviewer.Mode != AgentModeRunner {
				t.Errorf("%s: modes %s and %s, want runner", page, cfg.Agents.Executor.Mode, cfg.Agents.Reviewer.Mode)
			}
		}
		if n == 0 {
			t.Errorf("%s shows no runner configuration", page)
		}
	}
}
