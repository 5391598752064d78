package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSalvageLeftover: only the work a run left is salvaged; a checkout a
// removal stopped half way is never taken for it.
func TestSalvageLeftover(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	setup := func(t *testing.T) (repo, wt string) {
		repo = newRepo(t)
		for _, f := range []string{"a.txt", "b.txt"} {
			if err := os.WriteFile(filepath.Join(repo, f), []byte(f+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitOut(t, repo, "add", ".")
		gitOut(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "two files")
		wt = filepath.Join(t.TempDir(), "T-1")
		if err := AddTaskWorktree(ctx, repo, wt, "feature/s"); err != nil {
			t.Fatal(err)
		}
		return repo, wt
	}
	t.Run("TheRunsOwnDeletion", func(t *testing.T) {
		_, wt := setup(t)
		os.Remove(filepath.Join(wt, "a.txt"))
		os.WriteFile(filepath.Join(wt, "new.txt"), []byte("n\n"), 0o644)
		if err := NoteRunEnd(ctx, wt, "task_dispatch-T-1-1"); err != nil {
			t.Fatal(err)
		}
		ref, c, note, err := SalvageLeftover(ctx, wt, "T-1", "task ended")
		if err != nil || ref != SalvageRef("T-1", 1) || note.MsgID != "task_dispatch-T-1-1" {
			t.Fatalf("SalvageLeftover = %q %q %+v %v", ref, c, note, err)
		}
		if msg := gitOut(t, wt, "log", "-1", "--format=%s", ref); !strings.Contains(msg, "run on task_dispatch-T-1-1") {
			t.Errorf("message %q does not name the run", msg)
		}
	})
	t.Run("DeletionsNoRunLeft", func(t *testing.T) {
		_, wt := setup(t)
		if err := NoteRunEnd(ctx, wt, "task_dispatch-T-1-1"); err != nil {
			t.Fatal(err)
		}
		// A removal killed half way: files gone that the run left in place.
		os.Remove(filepath.Join(wt, "a.txt"))
		os.Remove(filepath.Join(wt, "README"))
		_, _, _, err := SalvageLeftover(ctx, wt, "T-1", "task ended")
		var refused *RefusedSalvage
		if !errors.As(err, &refused) || strings.Join(refused.Files, ",") != "README,a.txt" ||
			!strings.Contains(err.Error(), "run on task_dispatch-T-1-1 did not leave them deleted") {
			t.Fatalf("err %v, want the salvage refused naming README and a.txt", err)
		}
		if out := gitOut(t, wt, "branch", "--list", "ampflow/salvage/*"); out != "" {
			t.Errorf("a salvage branch was made: %q", out)
		}
	})
	t.Run("NoNote", func(t *testing.T) {
		_, wt := setup(t)
		os.Remove(filepath.Join(wt, "b.txt"))
		var refused *RefusedSalvage
		if _, _, _, err := SalvageLeftover(ctx, wt, "T-1", "task ended"); !errors.As(err, &refused) {
			t.Fatalf("err %v, want refused with no run's note", err)
		}
	})
	t.Run("IndexGone", func(t *testing.T) {
		_, wt := setup(t)
		os.WriteFile(filepath.Join(wt, "new.txt"), []byte("n\n"), 0o644)
		if err := os.Remove(filepath.Join(wt, ".git", "index")); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := SalvageLeftover(ctx, wt, "T-1", "task ended"); !errors.Is(err, ErrNotIntact) {
			t.Fatalf("err %v, want ErrNotIntact", err)
		}
	})
}
