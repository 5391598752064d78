package ssot

import (
	"context"
	"errors"
	"testing"
	"time"
)

// releaseOf is the release of l, read at its version, at.
func releaseOf(l MeshLease, at time.Time) LeaseChange {
	next := l
	next.State, next.Reason, next.ReleasedAt, next.LastHeartbeat, next.Version = "released", "task_ended", at, at, l.Version+1
	return LeaseChange{Lease: next, From: l.Version}
}

func TestSaveReleasing(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Microsecond)

		t.Run("TogetherAndOnce", func(t *testing.T) {
			l := directLease("Lr.1", "repo:/src/app:feature/r1", "T-2026-001", at)
			if _, ok, err := s.TakeLease(ctx, l, nil, false); err != nil || !ok {
				t.Fatalf("take: %v %v", ok, err)
			}
			st := taskState(1, 7, "done")
			rel := releaseOf(l, at.Add(time.Minute))
			// A second call is a local activity run again after a lost
			// workflow task: nothing is written twice.
			for try, want := range []int{2, 0} {
				res, released, err := s.SaveReleasing(ctx, st.TaskID, []Entry{ent("r1-a", `{"n":1}`), ent("r1-b", `{"n":2}`)}, st, nil, rel)
				if err != nil || !released || res.Written != want {
					t.Fatalf("try %d: written %d released %v err %v, want %d, true", try, res.Written, released, err, want)
				}
			}
			got, err := s.Lease(ctx, l.LeaseID)
			if err != nil || got.State != "released" || got.Version != 2 || got.Reason != "task_ended" {
				t.Errorf("lease after: %+v %v, want released at version 2", got, err)
			}
			if task, err := s.Task(ctx, st.TaskID); err != nil || task.Rev != 7 || task.Status != "done" {
				t.Errorf("state after: rev %d status %s %v, want 7 done", task.Rev, task.Status, err)
			}
		})

		t.Run("MovedWritesNothing", func(t *testing.T) {
			key := "repo:/src/app:feature/r2"
			l := directLease("Lr.2", key, "T-2026-003", at)
			if _, ok, err := s.TakeLease(ctx, l, nil, false); err != nil || !ok {
				t.Fatalf("take: %v %v", ok, err)
			}
			// The key's lease workflow adopts the lease for a task queued behind.
			if held, _, err := s.TakeLease(ctx, directLease("Lq.2", key, "T-2026-004", at), nil, true); err != nil || !held.InWorkflow {
				t.Fatalf("adopt: %+v %v", held, err)
			}
			st := taskState(3, 1, "done")
			res, released, err := s.SaveReleasing(ctx, st.TaskID, []Entry{ent("r2-a", `{"n":1}`)}, st, nil, releaseOf(l, at.Add(time.Minute)))
			if err != nil || released || res.Written != 0 {
				t.Fatalf("written %d released %v err %v, want nothing and not released", res.Written, released, err)
			}
			if _, err := s.Get(ctx, "r2-a"); !errors.Is(err, ErrNotFound) {
				t.Errorf("record of the moved batch: %v, want not found", err)
			}
			if _, err := s.Task(ctx, st.TaskID); !errors.Is(err, ErrNotFound) {
				t.Errorf("state of the moved batch: %v, want not found", err)
			}
			if got, err := s.Lease(ctx, l.LeaseID); err != nil || got.State != "active" || !got.InWorkflow {
				t.Errorf("lease after: %+v %v, want active in its workflow", got, err)
			}
		})

		t.Run("ConflictReleasesNothing", func(t *testing.T) {
			l := directLease("Lr.3", "repo:/src/app:feature/r3", "T-2026-005", at)
			if _, ok, err := s.TakeLease(ctx, l, nil, false); err != nil || !ok {
				t.Fatalf("take: %v %v", ok, err)
			}
			if _, err := s.Append(ctx, "T-2026-005", []Entry{ent("r3-a", `{"n":1}`)}); err != nil {
				t.Fatal(err)
			}
			_, released, err := s.SaveReleasing(ctx, "T-2026-005", []Entry{ent("r3-a", `{"n":2}`)}, nil, nil, releaseOf(l, at.Add(time.Minute)))
			var ce *ConflictError
			if !errors.As(err, &ce) || released {
				t.Fatalf("released %v err %v, want a conflict", released, err)
			}
			if got, err := s.Lease(ctx, l.LeaseID); err != nil || got.State != "active" || got.Version != 1 {
				t.Errorf("lease after the conflict: %+v %v, want still active at version 1", got, err)
			}
		})
	})
}
