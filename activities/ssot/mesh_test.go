package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestMeshLeases(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		l := MeshLease{LeaseID: "L1.a2V5", ResourceKey: "key", AgentID: "alice", State: "active", TTLSeconds: 30,
			AcquiredAt: at, ExpiresAt: at.Add(30 * time.Second), LastHeartbeat: at, Version: 1}
		ev := MeshEvent{ID: "L1-v1", Type: "lock.acquired", Severity: "info", To: "all", CreatedAt: at}
		if err := s.RecordLease(ctx, l, []MeshEvent{ev}); err != nil {
			t.Fatal(err)
		}
		ended := l
		ended.State, ended.Reason, ended.ReleasedAt, ended.Version = "expired", "expired", at.Add(30*time.Second), 3
		if err := s.RecordLease(ctx, ended, nil); err != nil {
			t.Fatal(err)
		}
		// A late write of version 2 changes nothing; the event is kept once.
		late := l
		late.Version = 2
		if err := s.RecordLease(ctx, late, []MeshEvent{ev}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Lease(ctx, "L1.a2V5")
		if err != nil || got.State != "expired" || got.Version != 3 || !got.ReleasedAt.Equal(at.Add(30*time.Second)) {
			t.Fatalf("lease %+v %v", got, err)
		}
		for i := range 3 {
			l := MeshLease{LeaseID: fmt.Sprintf("L%d.x", i+2), ResourceKey: fmt.Sprint(i), AgentID: "bob", State: "active",
				TTLSeconds: 30, AcquiredAt: at.Add(time.Duration(i) * time.Second), ExpiresAt: at, LastHeartbeat: at, Version: 1}
			if err := s.RecordLease(ctx, l, nil); err != nil {
				t.Fatal(err)
			}
		}
		var seen []string
		cursor := ""
		for {
			page, next, err := s.Leases(ctx, LeaseFilter{AgentID: "bob", State: "active"}, Page{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range page {
				seen = append(seen, l.LeaseID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if fmt.Sprint(seen) != "[L4.x L3.x L2.x]" {
			t.Fatalf("bob's active leases %v", seen)
		}
		if _, err := s.Lease(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown lease: %v", err)
		}
	})
}

func TestMeshEvents(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		add := func(e MeshEvent) MeshEvent {
			t.Helper()
			if e.Type == "" {
				e.Type, e.Severity = "agent.chat", "info"
			}
			if e.CreatedAt.IsZero() {
				at = at.Add(time.Second)
				e.CreatedAt = at
			}
			out, err := s.AppendEvent(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		root := add(MeshEvent{ID: "m1", From: "alice", To: "bob", Subject: "Code review request", Content: "Can you review src/auth.py?"})
		add(MeshEvent{ID: "m2", From: "bob", To: "alice", Subject: "Re: Code review request", Content: "Sure, @carol joins", ParentID: "m1", Deliver: []string{"carol"}})
		add(MeshEvent{ID: "m3", From: "alice", To: "bob", Subject: "Re: Re", Content: "Thanks, merged", ParentID: "m2"})
		add(MeshEvent{ID: "m4", From: "carol", To: "all", Subject: "System update", Content: "New protocol deployed", Channel: "work"})
		add(MeshEvent{ID: "m5", Type: "lock.acquired", Severity: "info", From: "ampflow", To: "dave", Subject: "lock", Content: "auth module"})
		// A retry by its sender answers what is stored.
		again := add(MeshEvent{ID: "m1", From: "alice", To: "y", CreatedAt: at.Add(time.Hour)})
		if again.Seq != root.Seq || again.From != "alice" {
			t.Fatalf("a retried event %+v, want the stored one", again)
		}
		if _, err := s.AppendEvent(ctx, MeshEvent{ID: "m9", Type: "agent.chat", ParentID: "nope"}); !isInvalid(err) {
			t.Fatalf("reply to an unknown parent: %v", err)
		}

		inbox := func(q InboxQuery, limit int) []string {
			t.Helper()
			var ids []string
			cursor := ""
			for {
				evs, next, err := s.MeshInbox(ctx, q, Page{Limit: limit, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					ids = append(ids, e.ID)
				}
				if next == "" {
					return ids
				}
				cursor = next
			}
		}
		for _, c := range []struct {
			q    InboxQuery
			want string
		}{
			{InboxQuery{Recipients: []string{"bob"}}, "[m1 m3]"},
			{InboxQuery{Recipients: []string{"bob"}, Broadcast: true}, "[m1 m3 m4]"},
			{InboxQuery{Recipients: []string{"bob"}, Broadcast: true, Desc: true}, "[m4 m3 m1]"},
			{InboxQuery{Recipients: []string{"carol"}}, "[m2]"},
			{InboxQuery{Recipients: []string{"bob"}, Broadcast: true, Channel: "work"}, "[m4]"},
			{InboxQuery{Recipients: []string{"bob"}, Since: root.CreatedAt}, "[m3]"},
		} {
			if got := fmt.Sprint(inbox(c.q, 1)); got != c.want {
				t.Errorf("inbox %+v: %s, want %s", c.q, got, c.want)
			}
		}

		thread, err := s.Thread(ctx, "m3")
		if err != nil || fmt.Sprint(eventIDs(thread)) != "[m1 m2 m3]" || thread[2].ThreadID != "m1" {
			t.Fatalf("thread of m3: %v %v", eventIDs(thread), err)
		}

		search := func(q SearchQuery) string {
			t.Helper()
			evs, _, err := s.SearchEvents(ctx, q, Page{})
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(eventIDs(evs))
		}
		for _, c := range []struct {
			q    SearchQuery
			want string
		}{
			{SearchQuery{Q: "review"}, "[m2 m1]"},
			{SearchQuery{Q: "REVIEW auth.py"}, "[m1]"},
			{SearchQuery{Q: "deployed"}, "[m4]"},
			{SearchQuery{Q: "nothing-here"}, "[]"},
			{SearchQuery{From: "alice"}, "[m3 m1]"},
			{SearchQuery{To: "bob", Q: "merged"}, "[m3]"},
			{SearchQuery{Type: "lock.acquired"}, "[m5]"},
			{SearchQuery{Since: root.CreatedAt.Add(time.Second), Until: root.CreatedAt.Add(3 * time.Second)}, "[m3 m2]"},
			{SearchQuery{Q: `" OR "x`}, "[]"},
			// what an agent may read: its own, to it, mentioning it, to all
			{SearchQuery{Viewers: []string{"carol"}}, "[m4 m2]"},
			{SearchQuery{Viewers: []string{"dave"}}, "[m5 m4]"},
			{SearchQuery{Viewers: []string{"erin", "bob"}, Q: "review"}, "[m2 m1]"},
			{SearchQuery{Viewers: []string{"erin"}}, "[m4]"},
		} {
			if got := search(c.q); got != c.want {
				t.Errorf("search %+v: %s, want %s", c.q, got, c.want)
			}
		}

		read := at.Add(time.Minute)
		for _, who := range []string{"bob", "bob", "carol"} {
			if _, err := s.MarkRead(ctx, "m1", who, read); err != nil {
				t.Fatal(err)
			}
			read = read.Add(time.Second)
		}
		e, err := s.Event(ctx, "m1")
		if err != nil || len(e.ReadBy) != 2 || e.ReadBy[0].AgentID != "bob" || !e.ReadBy[0].ReadAt.Equal(at.Add(time.Minute)) {
			t.Fatalf("read_by %+v %v", e.ReadBy, err)
		}
		if _, err := s.MarkRead(ctx, "nope", "bob", read); !errors.Is(err, ErrNotFound) {
			t.Fatalf("reading an unknown event: %v", err)
		}
	})
}

func isInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

func eventIDs(evs []MeshEvent) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

func TestEventIDIsItsSenders(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		secret := MeshEvent{ID: "E1", Type: "agent.chat", AgentID: "alice", From: "alice", To: "carol",
			Subject: "private", Content: "the secret", CreatedAt: at}
		if _, err := s.AppendEvent(ctx, secret); err != nil {
			t.Fatal(err)
		}
		// A retry by its sender answers the stored event.
		again, err := s.AppendEvent(ctx, secret)
		if err != nil || again.Content != "the secret" {
			t.Fatalf("retry: %+v %v", again, err)
		}
		// Another sender posting the id gets nothing of alice's.
		for _, other := range []MeshEvent{
			{ID: "E1", Type: "agent.chat", AgentID: "bob", From: "bob", To: "alice", CreatedAt: at},
			{ID: "E1", Type: "agent.chat", AgentID: "bob", From: "alice", To: "alice", CreatedAt: at},
		} {
			got, err := s.AppendEvent(ctx, other)
			if !errors.Is(err, ErrEventIDTaken) || got.Content != "" || got.Seq != 0 {
				t.Fatalf("%s posting alice's id: %+v %v", other.AgentID, got, err)
			}
		}
		if err := s.AppendEvents(ctx, []MeshEvent{{ID: "E1", Type: "agent.chat", From: "ampflow", AgentID: "ampflow", CreatedAt: at}}); !errors.Is(err, ErrEventIDTaken) {
			t.Fatalf("a batch reusing alice's id: %v", err)
		}
		e, err := s.Event(ctx, "E1")
		if err != nil || e.From != "alice" || e.Content != "the secret" {
			t.Fatalf("alice's event after the attempts: %+v %v", e, err)
		}
	})
}

// TestSaveEvents: a save's mesh events commit with its records, once
// however often the save is retried, and an event that cannot be stored
// leaves nothing of the save behind.
func TestSaveEvents(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
		ev := func(id, from string) MeshEvent {
			return MeshEvent{ID: id, Type: "task.created", Severity: "info", From: from, To: "executor", TaskID: "T-1", CreatedAt: at}
		}
		entries := []Entry{{ID: "plan-T-1", Kind: "event", Body: json.RawMessage(`{"a":1}`), RecordedAt: at}}
		for range 2 { // the second is a retry
			if _, err := s.SaveEvents(ctx, "T-1", entries, nil, []MeshEvent{ev("e1", "ampflow")}); err != nil {
				t.Fatal(err)
			}
		}
		got, _, err := s.SearchEvents(ctx, SearchQuery{TaskID: "T-1"}, Page{})
		if err != nil || len(got) != 1 || got[0].ID != "e1" {
			t.Fatalf("events of T-1: %+v, %v; want e1 once", got, err)
		}
		if _, err := s.AppendEvent(ctx, ev("e2", "mallory")); err != nil {
			t.Fatal(err)
		}
		entries = []Entry{{ID: "ack-T-2", Kind: "event", Body: json.RawMessage(`{"b":2}`), RecordedAt: at}}
		if _, err := s.SaveEvents(ctx, "T-2", entries, nil, []MeshEvent{ev("e2", "ampflow")}); !errors.Is(err, ErrEventIDTaken) {
			t.Fatalf("saving with another sender's event id: %v, want ErrEventIDTaken", err)
		}
		if _, err := s.Get(ctx, "ack-T-2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the record of a failed save: %v, want not found", err)
		}
	})
}
