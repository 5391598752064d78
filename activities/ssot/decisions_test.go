package ssot

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

func TestSaveDecisions(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		open := func(id string) PendingDecision {
			return PendingDecision{ID: id, Kind: "gate", RaisedAt: at, ExpiresAt: at.Add(time.Hour), Body: json.RawMessage(`{"id":"` + id + `"}`)}
		}
		listed := func() []string {
			t.Helper()
			ds, _, err := s.Pending(ctx, Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, d := range ds {
				if d.Subject != "gate-1" {
					t.Errorf("decision %s has subject %q, want gate-1", d.ID, d.Subject)
				}
				ids = append(ids, d.ID)
			}
			return ids
		}
		if err := s.SaveDecisions(ctx, "gate-1", 1, []PendingDecision{open("gate-1-d1")}); err != nil {
			t.Fatal(err)
		}
		if got := listed(); len(got) != 1 || got[0] != "gate-1-d1" {
			t.Fatalf("listed %v after the first save", got)
		}
		if err := s.SaveDecisions(ctx, "gate-1", 3, nil); err != nil {
			t.Fatal(err)
		}
		// A save older than the kept one, retried late, changes nothing.
		if err := s.SaveDecisions(ctx, "gate-1", 2, []PendingDecision{open("gate-1-d1")}); err != nil {
			t.Fatal(err)
		}
		if got := listed(); len(got) != 0 {
			t.Fatalf("listed %v: an older save brought back a closed decision", got)
		}
		if err := s.SaveDecisions(ctx, "gate-1", 4, []PendingDecision{{ID: "gate-1-d2", Body: json.RawMessage(`{`)}}); err == nil {
			t.Error("a decision that is not JSON was saved")
		}
		if err := s.SaveDecisions(ctx, "", 5, nil); err == nil {
			t.Error("an empty subject was accepted")
		}
	})
}
