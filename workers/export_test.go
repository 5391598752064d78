package workers

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
)

// With ssot.git.commit set, a record written through the worker's
// Recorder reaches the git export without anyone running `ampflow ssot
// export`, and Close waits for the export under way.
func TestBuildExportsToGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary")
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.SSOT.URL = filepath.Join(cfg.DataDir, "ampflow.db")
	cfg.SSOT.Git.Commit = true
	cfg.SSOT.Git.Dir = filepath.Join(cfg.DataDir, "ssot-git")
	parts, err := Build(Options{Config: cfg, DecisionKeyFile: filepath.Join(cfg.DataDir, DecisionKeyFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer parts.Close()
	body, _ := json.Marshal(map[string]string{"note": "hello"})
	in := activities.RecordInput{TaskID: "T-2026-001", Entries: []activities.RecordEntry{{ID: "event-T-2026-001-1", Kind: ssot.KindEvent, Body: body}}}
	if _, err := parts.Activities.Store.Record(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(cfg.SSOT.Git.Dir, "tasks", "T-2026-001.json")
	deadline := time.Now().Add(30 * time.Second)
	for {
		log, _ := exec.Command("git", "-C", cfg.SSOT.Git.Dir, "log", "--oneline", "--", "tasks/T-2026-001.json").Output()
		b, _ := os.ReadFile(file)
		if strings.Contains(string(b), "event-T-2026-001-1") && len(strings.TrimSpace(string(log))) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no committed export of T-2026-001 after 30s: file %q, log %q", b, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
