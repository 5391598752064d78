package ssot

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestSearchIndexesNewEvents: a search finds every event stored before
// it, whichever searches came before; on SQLite an event is indexed by
// the first search after it is stored (mesh_fts_mark), not as it is
// stored.
func TestSearchIndexesNewEvents(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		n := 0
		add := func(content string) int64 {
			t.Helper()
			n++
			e, err := s.AppendEvent(ctx, MeshEvent{ID: fmt.Sprintf("m%d", n), Type: "agent.chat", Severity: "info",
				From: "alice", To: "bob", Subject: "note", Content: content, CreatedAt: at.Add(time.Duration(n) * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			return e.Seq
		}
		search := func(q string, want ...string) {
			t.Helper()
			evs, _, err := s.SearchEvents(ctx, SearchQuery{Q: q}, Page{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, e.ID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("search %q found %v, want %v", q, got, want)
			}
		}
		mark := func() int64 {
			t.Helper()
			var m int64
			if err := s.db.QueryRowContext(ctx, `SELECT seq FROM mesh_fts_mark`).Scan(&m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		add("alpha")
		search("alpha", "m1")
		add("alpha beta")
		second := add("gamma")
		if s.engine == EngineSQLite && mark() >= second {
			t.Errorf("mark %d: events were indexed as they were stored", mark())
		}
		search("alpha", "m2", "m1")
		search("beta", "m2")
		search("gamma", "m3")
		if s.engine == EngineSQLite && mark() != second {
			t.Errorf("mark %d after the searches, want the last event's seq %d", mark(), second)
		}
		search("delta")
	})
}
