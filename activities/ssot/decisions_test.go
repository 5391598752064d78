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

func TestSaveOutbox(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		msg := func(id string) OutboxMessage {
			return OutboxMessage{MsgID: id, Role: "reviewer", Type: "review_request", SentAt: at, Body: json.RawMessage(`{"msg_id":"` + id + `"}`)}
		}
		inbox := func() []string {
			t.Helper()
			ms, _, err := s.Inbox(ctx, "reviewer", Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range ms {
				if m.TaskID != "T-2026-0209057001" {
					t.Errorf("message %s has task %q, want the subject", m.MsgID, m.TaskID)
				}
				ids = append(ids, m.MsgID)
			}
			return ids
		}
		const subject = "T-2026-0209057001"
		if err := s.SaveOutbox(ctx, subject, 1, []OutboxMessage{msg("review_request-1")}); err != nil {
			t.Fatal(err)
		}
		if got := inbox(); len(got) != 1 || got[0] != "review_request-1" {
			t.Fatalf("inbox %v after the first save", got)
		}
		if err := s.SaveOutbox(ctx, subject, 3, nil); err != nil {
			t.Fatal(err)
		}
		// A save older than the kept one, retried late, changes nothing.
		if err := s.SaveOutbox(ctx, subject, 2, []OutboxMessage{msg("review_request-1")}); err != nil {
			t.Fatal(err)
		}
		if got := inbox(); len(got) != 0 {
			t.Fatalf("inbox %v: an older save brought back an answered message", got)
		}
		if err := s.SaveOutbox(ctx, subject, 4, []OutboxMessage{{MsgID: "x", Body: json.RawMessage(`{}`)}}); err == nil {
			t.Error("a message without a role was saved")
		}
		if err := s.SaveOutbox(ctx, "", 5, nil); err == nil {
			t.Error("an empty subject was accepted")
		}
	})
}
