package activities

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
)

// chainSource is an ExportSource that serves the chains it is given.
type chainSource map[string][]ssot.Record

func (c chainSource) Tasks(context.Context, ssot.Page) ([]string, string, error) {
	var ids []string
	for id := range c {
		ids = append(ids, id)
	}
	return ids, "", nil
}

func (c chainSource) History(_ context.Context, taskID string, _ ssot.Page) ([]ssot.Record, string, error) {
	recs, ok := c[taskID]
	if !ok {
		return nil, "", ssot.ErrNotFound
	}
	return recs, "", nil
}

// chainOf is the chain a fresh store makes of ids, for task.
func chainOf(t *testing.T, task string, ids ...string) []ssot.Record {
	t.Helper()
	db := sqlStore(t)
	appendRecords(t, db, task, ids...)
	recs, _, err := db.History(context.Background(), task, ssot.Page{Limit: ssot.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestExportAnchors: the export verifies a chain before it writes it, and
// refuses, reporting it and leaving the file as it was, a chain that does
// not extend the head exported before: rewritten, cut, or gone.
func TestExportAnchors(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git:", err)
	}
	ctx := context.Background()
	const id = "T-2026-001"
	genuine := chainOf(t, id, "m1", "m2")
	src := chainSource{id: genuine}
	dir := filepath.Join(t.TempDir(), "ssot-git")
	e, err := NewExporter(src, ExportOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Export(ctx); err != nil || res.Changed != 1 || len(res.Refused) != 0 {
		t.Fatalf("first export: %+v %v", res, err)
	}
	path := filepath.Join(dir, "tasks", id+".json")
	anchored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	tampered := append([]ssot.Record(nil), chainOf(t, "T-2026-002", "m1")...)
	tampered[0].Body = json.RawMessage(`{"msg_id":"changed"}`)
	for _, c := range []struct {
		name, task string
		recs       []ssot.Record
		want       string
	}{
		{"Rewritten", id, chainOf(t, id, "x1", "x2", "x3"), "is not the store's record #2"},
		{"Cut", id, genuine[:1], "past the store's chain"},
		{"FailsVerification", "T-2026-002", tampered, "fails verification"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src[c.task] = c.recs
			defer func() { src[id] = genuine; delete(src, "T-2026-002") }()
			res, err := e.Export(ctx, c.task)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Refused) != 1 || res.Refused[0].TaskID != c.task || !strings.Contains(res.Refused[0].Problem, c.want) || res.Committed {
				t.Fatalf("export: %+v, want %s refused (%s)", res, c.task, c.want)
			}
			if now, _ := os.ReadFile(path); string(now) != string(anchored) {
				t.Error("the anchored file was changed")
			}
			if _, err := os.Stat(filepath.Join(dir, "tasks", "T-2026-002.json")); !os.IsNotExist(err) {
				t.Error("a chain failing verification was written")
			}
		})
	}
	t.Run("Gone", func(t *testing.T) {
		delete(src, id)
		defer func() { src[id] = genuine }()
		res, err := e.Export(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Refused) != 1 || res.Removed != 0 || !strings.Contains(res.Refused[0].Problem, "past the store's chain") {
			t.Fatalf("export: %+v, want the file kept and refused", res)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("the anchored file was removed: %v", err)
		}
	})
	t.Run("Extended", func(t *testing.T) {
		db := sqlStore(t)
		appendRecords(t, db, id, "m1", "m2")
		appendRecords(t, db, id, "m3")
		recs, _, err := db.History(ctx, id, ssot.Page{Limit: ssot.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		src[id] = recs
		res, err := e.Export(ctx, id)
		if err != nil || len(res.Refused) != 0 || res.Changed != 1 || !res.Committed {
			t.Fatalf("export of the chain extended: %+v %v", res, err)
		}
	})
}
