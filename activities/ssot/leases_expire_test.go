package ssot

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func expired(l MeshLease, at time.Time) LeaseChange {
	next := l
	next.State, next.Reason, next.ReleasedAt, next.Version = "expired", "expired", at, l.Version+1
	return LeaseChange{Lease: next, From: l.Version}
}

func TestDueLeasesInOrderOfExpiry(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		other := openStore(t, u)
		at := time.Now().UTC().Truncate(time.Microsecond)
		if next, err := s.NextLeaseExpiry(ctx); err != nil || !next.IsZero() {
			t.Fatalf("next expiry of no leases: %s %v, want zero", next, err)
		}
		for i, ttl := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second, 9 * time.Second} {
			l := directLease(fmt.Sprintf("L%d.x", i), fmt.Sprintf("k:%d", i), "alice", at)
			l.ExpiresAt = at.Add(ttl)
			if _, ok, err := s.TakeLease(ctx, l, nil, false); err != nil || !ok {
				t.Fatalf("take %d: %v %v", i, ok, err)
			}
		}
		// A lease its workflow holds is the workflow's to end.
		wf := directLease("Lw.x", "k:wf", "bob", at)
		wf.ExpiresAt = at.Add(time.Millisecond)
		if _, ok, err := s.TakeLease(ctx, wf, nil, true); err != nil || !ok {
			t.Fatalf("workflow's take: %v %v", ok, err)
		}
		if got, err := other.Lease(ctx, "Lw.x"); err != nil || !got.InWorkflow {
			t.Fatalf("workflow's lease %+v %v, want InWorkflow", got, err)
		}
		if next, err := other.NextLeaseExpiry(ctx); err != nil || !next.Equal(at.Add(time.Second)) {
			t.Fatalf("next expiry %s %v, want %s", next, err, at.Add(time.Second))
		}
		due, err := other.DueLeases(ctx, at.Add(2500*time.Millisecond), 10)
		if err != nil || len(due) != 2 || due[0].LeaseID != "L1.x" || due[1].LeaseID != "L2.x" || due[0].InWorkflow {
			t.Fatalf("due by 2.5s: %+v %v, want L1.x then L2.x", due, err)
		}
		if due, err := other.DueLeases(ctx, at.Add(time.Hour), 1); err != nil || len(due) != 1 || due[0].LeaseID != "L1.x" {
			t.Fatalf("due with limit 1: %+v %v", due, err)
		}
		ok, err := other.CompareLeases(ctx, []LeaseChange{expired(due[0], at.Add(time.Second)), expired(due[1], at.Add(time.Second))})
		if err != nil || len(ok) != 2 || !ok[0] || !ok[1] {
			t.Fatalf("expiring: %v %v", ok, err)
		}
		// A retried sweep is answered as written, and writes nothing more.
		if ok, err := s.CompareLeases(ctx, []LeaseChange{expired(due[0], at.Add(time.Second))}); err != nil || !ok[0] {
			t.Fatalf("retried expiry: %v %v", ok, err)
		}
		if next, err := s.NextLeaseExpiry(ctx); err != nil || !next.Equal(at.Add(3*time.Second)) {
			t.Fatalf("next expiry after the sweep %s %v, want %s", next, err, at.Add(3*time.Second))
		}
		if got, err := s.Lease(ctx, "L1.x"); err != nil || got.State != "expired" || got.Version != 2 {
			t.Fatalf("swept lease %+v %v", got, err)
		}
		// The key is free for another at once.
		if _, ok, err := s.TakeLease(ctx, directLease("L1b.x", "k:1", "carol", at), nil, false); err != nil || !ok {
			t.Fatalf("take after the expiry: %v %v", ok, err)
		}
	})
}

// TestLeaseRacesAcrossWorkers runs a holder's renewal, its release and a
// sweeper's expiry of one lease at once from three stores on one
// database, many times: exactly one change wins each time, and the lease
// is as that change wrote it.
func TestLeaseRacesAcrossWorkers(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		workers := []*DB{s, openStore(t, u), openStore(t, u)}
		at := time.Now().UTC().Truncate(time.Microsecond)
		for round := range 10 {
			key := fmt.Sprintf("k:race/%d", round)
			l := directLease(fmt.Sprintf("Lr%d.x", round), key, "alice", at)
			if _, ok, err := s.TakeLease(ctx, l, nil, false); err != nil || !ok {
				t.Fatalf("take: %v %v", ok, err)
			}
			renewed := l
			renewed.LastHeartbeat, renewed.ExpiresAt, renewed.Version = at.Add(time.Second), at.Add(time.Hour), 2
			released := l
			released.State, released.Reason, released.ReleasedAt, released.LastHeartbeat, released.Version = "released", "released", at.Add(2*time.Second), at.Add(2*time.Second), 2
			changes := []func(db *DB) (bool, error){
				func(db *DB) (bool, error) { return db.CompareLease(ctx, renewed, 1, nil) },
				func(db *DB) (bool, error) { return db.CompareLease(ctx, released, 1, nil) },
				func(db *DB) (bool, error) {
					ok, err := db.CompareLeases(ctx, []LeaseChange{expired(l, at.Add(3*time.Second))})
					if err != nil {
						return false, err
					}
					return ok[0], nil
				},
			}
			var (
				mu   sync.Mutex
				won  []int
				wg   sync.WaitGroup
				gate = make(chan struct{})
			)
			for i, change := range changes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-gate
					ok, err := change(workers[i])
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Error(err)
					} else if ok {
						won = append(won, i)
					}
				}()
			}
			close(gate)
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("round %d: changes %v won, want exactly one", round, won)
			}
			got, err := s.Lease(ctx, l.LeaseID)
			want := []string{"active", "released", "expired"}[won[0]]
			if err != nil || got.State != want || got.Version != 2 {
				t.Fatalf("round %d: stored %+v %v, want %s at version 2", round, got, err, want)
			}
		}
	})
}
