package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
)

// TestFirstWriteIdempotent checks the two writers of a task's first record
// on both engines: the client that started the task writes the plan
// record and the state at Rev 0, the workflow the same plan record with
// its state at Rev 1, in either order or at once. The chain holds the
// plan record once, and the workflow's state wins.
func TestFirstWriteIdempotent(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	plan := func(id string) RecordEntry {
		return RecordEntry{ID: "plan-" + id, Kind: ssot.KindEvent, Body: json.RawMessage(`{"task_id":"` + id + `","plan":{"repo":"/r"},"policy":{"admins":["alice"]}}`)}
	}
	state := func(id, status string) json.RawMessage {
		return json.RawMessage(`{"task_id":"` + id + `","status":"` + status + `","started_at":"2026-05-01T12:00:00Z","updated_at":"2026-05-01T12:00:00Z"}`)
	}
	client := func(id string) RecordInput {
		e := plan(id)
		e.RecordedAt = at
		return RecordInput{TaskID: id, Rev: 0, Task: state(id, "awaiting_approval"), Entries: []RecordEntry{e}}
	}
	workflow := func(id string) RecordInput {
		e := plan(id)
		e.RecordedAt = at.Add(40 * time.Millisecond) // workflow time: later, and ignored by the comparison
		return RecordInput{TaskID: id, Rev: 1, Task: state(id, "dispatched"), Entries: []RecordEntry{e}}
	}
	check := func(t *testing.T, s *TaskRecord, id string) {
		t.Helper()
		ctx := context.Background()
		recs, _, err := s.Store.(*ssot.DB).History(ctx, id, ssot.Page{})
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		if len(recs) != 1 || recs[0].ID != "plan-"+id {
			t.Fatalf("history of %s: %+v, want the plan record once", id, recs)
		}
		st, err := s.Store.(*ssot.DB).Task(ctx, id)
		if err != nil {
			t.Fatalf("state of %s: %v", id, err)
		}
		if st.Rev != 1 || st.Status != "dispatched" {
			t.Errorf("state of %s at rev %d %s, want the workflow's rev 1 dispatched", id, st.Rev, st.Status)
		}
		if _, err := s.Store.(*ssot.DB).Verify(ctx, id); err != nil {
			t.Errorf("chain of %s: %v", id, err)
		}
	}
	ssotEngines(t, func(t *testing.T, s *TaskRecord) {
		ctx := context.Background()
		t.Run("ClientFirst", func(t *testing.T) {
			id := "T-2026-001"
			if res, err := s.Record(ctx, client(id)); err != nil || res.Written != 1 {
				t.Fatalf("client's write: %+v, %v; want 1 written", res, err)
			}
			if res, err := s.Record(ctx, workflow(id)); err != nil || res.Written != 0 {
				t.Fatalf("workflow's write: %+v, %v; want nothing new", res, err)
			}
			check(t, s, id)
		})
		t.Run("WorkflowFirst", func(t *testing.T) {
			id := "T-2026-002"
			if res, err := s.Record(ctx, workflow(id)); err != nil || res.Written != 1 {
				t.Fatalf("workflow's write: %+v, %v; want 1 written", res, err)
			}
			if res, err := s.Record(ctx, client(id)); err != nil || res.Written != 0 {
				t.Fatalf("client's late write: %+v, %v; want nothing new", res, err)
			}
			check(t, s, id)
		})
		t.Run("AtOnce", func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for i := range 32 {
				id := fmt.Sprintf("T-2026-%03d", 100+i)
				for _, in := range []RecordInput{client(id), workflow(id)} {
					wg.Go(func() {
						if _, err := s.Record(ctx, in); err != nil {
							errs <- fmt.Errorf("%s rev %d: %w", id, in.Rev, err)
						}
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			for i := range 32 {
				check(t, s, fmt.Sprintf("T-2026-%03d", 100+i))
			}
		})
	})
}
