package workers

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// TestFinishCleanups: a worker that starts finishes removing the runner
// checkout a stopped one marked, leaves other workers' marks alone, and
// says so.
func TestFinishCleanups(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Agents.Executor.Mode = config.AgentModeRunner
	store, err := ssot.Open(ctx, filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	dir := activities.WorktreeDir(cfg.DataDir, "T-2026-003", amp.RoleExecutor)
	if err := os.MkdirAll(filepath.Join(dir, "half"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := "/elsewhere/worktrees/T-2026-004"
	for _, m := range []ssot.WorktreeMark{{Path: dir, TaskID: "T-2026-003"}, {Path: other, TaskID: "T-2026-004"}} {
		if err := store.MarkWorktree(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	FinishCleanups(cfg, store, slog.New(slog.NewTextHandler(&logs, nil)))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the half-removed checkout is still there (%v)", err)
	}
	if ok, _ := store.WorktreeMarked(ctx, dir); ok {
		t.Error("its mark is still kept")
	}
	if ok, _ := store.WorktreeMarked(ctx, other); !ok {
		t.Error("another data_dir's mark was dropped")
	}
	if !strings.Contains(logs.String(), "T-2026-003") {
		t.Errorf("logs %q do not name the task", logs.String())
	}
}
