package activities

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

func sqlStore(t *testing.T) *ssot.DB {
	t.Helper()
	db, err := ssot.Open(context.Background(), filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func appendRecords(t *testing.T, db ssot.Chains, task string, ids ...string) {
	t.Helper()
	var es []ssot.Entry
	for _, id := range ids {
		es = append(es, ssot.Entry{ID: id, Kind: "message", RecordedAt: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC),
			Body: json.RawMessage(`{"msg_id":"` + id + `"}`)})
	}
	if _, err := db.Append(context.Background(), task, es); err != nil {
		t.Fatal(err)
	}
}

// gitOut runs git in dir (a test's own repositories) and returns its output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := RunGit(context.Background(), "git", dir, false, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	return strings.TrimSpace(string(out))
}

func TestExporter(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git:", err)
	}
	ctx := context.Background()
	db := sqlStore(t)
	appendRecords(t, db, "T-2026-001", "m1", "m2")
	appendRecords(t, db, "T-2026-002", "m3")

	remote := filepath.Join(t.TempDir(), "mirror.git")
	gitOut(t, filepath.Dir(remote), "init", "-q", "--bare", "-b", "main", remote)
	dir := filepath.Join(t.TempDir(), "ssot-git")
	e, err := NewExporter(db, ExportOptions{Dir: dir, Push: true, Remote: remote})
	if err != nil {
		t.Fatal(err)
	}

	res, err := e.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != 2 || res.Changed != 2 || !res.Committed || !res.Pushed {
		t.Fatalf("first export: %+v", res)
	}
	var doc TaskExport
	data, err := os.ReadFile(filepath.Join(dir, "tasks", "T-2026-001.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	head, err := db.Head(ctx, "T-2026-001")
	if err != nil {
		t.Fatal(err)
	}
	if doc.TaskID != "T-2026-001" || len(doc.Records) != 2 || doc.Records[1].ID != "m2" || doc.Head != head {
		t.Fatalf("exported file: %+v, want m1, m2 and head %+v", doc, head)
	}
	first := gitOut(t, dir, "rev-parse", "HEAD")
	if got := gitOut(t, remote, "rev-parse", "main"); got != first {
		t.Fatalf("remote main = %s, want the export's commit %s", got, first)
	}

	t.Run("Unchanged", func(t *testing.T) {
		res, err := e.Export(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Changed != 0 || res.Committed {
			t.Fatalf("second export of an unchanged store: %+v", res)
		}
		if got := gitOut(t, dir, "rev-list", "--count", "HEAD"); got != "1" {
			t.Fatalf("commits after an export that changed nothing: %s, want 1", got)
		}
	})

	t.Run("OneTask", func(t *testing.T) {
		appendRecords(t, db, "T-2026-002", "m4")
		res, err := e.Export(ctx, "T-2026-002")
		if err != nil {
			t.Fatal(err)
		}
		if res.Tasks != 1 || res.Changed != 1 || !res.Committed {
			t.Fatalf("export of a task that changed: %+v", res)
		}
		if msg := gitOut(t, dir, "log", "-1", "--format=%s"); msg != "ssot export: T-2026-002" {
			t.Errorf("commit message %q", msg)
		}
		if got, want := gitOut(t, remote, "rev-parse", "main"), gitOut(t, dir, "rev-parse", "HEAD"); got != want {
			t.Fatalf("remote main = %s, want %s", got, want)
		}
		if got := gitOut(t, remote, "show", "main:tasks/T-2026-002.json"); !strings.Contains(got, `"m4"`) {
			t.Fatalf("remote's file lacks m4:\n%s", got)
		}
	})

	t.Run("StrayFileRemoved", func(t *testing.T) {
		stray := filepath.Join(dir, "tasks", "T-1999-001.json")
		if err := os.WriteFile(stray, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// A file edited by hand is put back.
		edited := filepath.Join(dir, "tasks", "T-2026-001.json")
		if err := os.WriteFile(edited, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := e.Export(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Removed != 1 || res.Changed != 1 || res.Committed {
			t.Fatalf("export over a stray and an edited file: %+v, want both undone and no commit", res)
		}
		if _, err := os.Stat(stray); !os.IsNotExist(err) {
			t.Fatalf("stray file: %v", err)
		}
		if st := gitOut(t, dir, "status", "--porcelain"); st != "" {
			t.Fatalf("work tree not clean:\n%s", st)
		}
	})

	t.Run("NewProcessPushesOnce", func(t *testing.T) {
		// A commit the remote never got (its push failed, say) is pushed
		// by the next process's first export, which itself commits nothing.
		other := filepath.Join(t.TempDir(), "other.git")
		gitOut(t, filepath.Dir(other), "init", "-q", "--bare", "-b", "main", other)
		e2, err := NewExporter(db, ExportOptions{Dir: dir, Push: true, Remote: other})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e2.Export(ctx)
		if err != nil || res.Committed || !res.Pushed {
			t.Fatalf("export: %+v, %v", res, err)
		}
		if got, want := gitOut(t, other, "rev-parse", "main"), gitOut(t, dir, "rev-parse", "HEAD"); got != want {
			t.Fatalf("other remote main = %s, want %s", got, want)
		}
	})
}
