package ssot

import (
	"context"
	"testing"
	"time"
)

// TestRepoRecords: the records of a kind whose body holds a text, in the
// chains of one repository's tasks, and none of another's.
func TestRepoRecords(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
		save := func(id, repo string, entries ...Entry) {
			st := &TaskState{TaskID: id, Rev: 1, Status: "in_progress", Repo: repo, StartedAt: at, UpdatedAt: at, State: []byte(`{}`)}
			if _, err := s.Save(ctx, id, entries, st); err != nil {
				t.Fatal(err)
			}
		}
		rec := func(id, kind, body string) Entry {
			return Entry{ID: id, Kind: kind, RecordedAt: at, Body: []byte(body)}
		}
		save("T-2026-001", "/srv/a",
			rec("T-2026-001-tc1.outcome", "tool_call", `{"id":"T-2026-001-tc1","option":"allow_repo","kind":"network"}`),
			rec("T-2026-001-tc2.outcome", "tool_call", `{"id":"T-2026-001-tc2","option":"allow_once","kind":"network"}`),
			rec("T-2026-001-m1", "message", `{"option":"allow_repo"}`))
		save("T-2026-002", "/srv/b", rec("T-2026-002-tc1.outcome", "tool_call", `{"id":"T-2026-002-tc1","option":"allow_repo"}`))
		got, err := s.RepoRecords(ctx, "/srv/a", "tool_call", `"option":"allow_repo"`)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != "T-2026-001-tc1.outcome" {
			t.Fatalf("records %+v, want T-2026-001-tc1.outcome alone", got)
		}
		// LIKE's wildcards in the text are matched as they are.
		if got, err := s.RepoRecords(ctx, "/srv/a", "tool_call", `"option":"allow%"`); err != nil || len(got) != 0 {
			t.Errorf("a %% in the text matched %d records (%v)", len(got), err)
		}
		if _, err := s.RepoRecords(ctx, "", "tool_call", "x"); err == nil {
			t.Error("no repository: no error")
		}
	})
}
