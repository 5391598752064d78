package ssot

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func directLease(id, key, agent string, at time.Time) MeshLease {
	return MeshLease{LeaseID: id, ResourceKey: key, AgentID: agent, State: "active", TTLSeconds: 600,
		AcquiredAt: at, LastHeartbeat: at, ExpiresAt: at.Add(10 * time.Minute), Version: 1}
}

func TestTakeLeaseOneHolderAcrossWorkers(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		workers := []*DB{s, openStore(t, u), openStore(t, u)}
		at := time.Now().UTC().Truncate(time.Microsecond)
		for round := range 10 {
			key := fmt.Sprintf("repo:/src/app:feature/%d", round)
			var (
				mu    sync.Mutex
				taken []string
				wg    sync.WaitGroup
			)
			start := make(chan struct{})
			for w, db := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					agent := fmt.Sprintf("T-%d-%d", round, w)
					held, ok, err := db.TakeLease(ctx, directLease("L"+agent, key, agent, at), nil, false)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						t.Error(err)
					} else if ok {
						if held.AgentID != agent {
							t.Errorf("taken, but held by %s, not %s", held.AgentID, agent)
						}
						taken = append(taken, agent)
					}
				}()
			}
			close(start)
			wg.Wait()
			if len(taken) != 1 {
				t.Fatalf("round %d: taken by %v, want exactly one", round, taken)
			}
		}
	})
}

func TestTakeLeaseAdoptedThenCompare(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Microsecond)
		key := "repo:/src/app:main"
		l := directLease("La.x", key, "T-1", at)
		if _, ok, err := s.TakeLease(ctx, l, nil, false); err != nil || !ok {
			t.Fatalf("take: %v %v", ok, err)
		}
		// Taken again by its holder (a retry): the same lease, nothing written.
		if held, ok, err := s.TakeLease(ctx, directLease("Lb.x", key, "T-1", at), nil, false); err != nil || !ok || held.LeaseID != "La.x" {
			t.Fatalf("retried take: %+v %v %v", held, ok, err)
		}
		if held, ok, err := s.TakeLease(ctx, directLease("Lc.x", key, "T-2", at), nil, false); err != nil || ok || held.AgentID != "T-1" {
			t.Fatalf("take of a held key: %+v %v %v, want T-1's lease", held, ok, err)
		}
		// The holder renews at the version it holds, and a retry of the renewal is no error.
		renewed := l
		renewed.LastHeartbeat, renewed.ExpiresAt, renewed.Version = at.Add(time.Second), at.Add(11*time.Minute), 2
		for range 2 {
			if ok, err := s.CompareLease(ctx, renewed, 1, nil); err != nil || !ok {
				t.Fatalf("renew: %v %v", ok, err)
			}
		}
		// A lease workflow adopts the lease: the holder's next change fails.
		held, ok, err := s.TakeLease(ctx, directLease("Ld.x", key, "agent-1", at), nil, true)
		if err != nil || ok || held.LeaseID != "La.x" || held.Version != 3 {
			t.Fatalf("adopt: %+v %v %v, want La.x at version 3", held, ok, err)
		}
		released := renewed
		released.State, released.Reason, released.ReleasedAt, released.LastHeartbeat, released.Version = "released", "task_ended", at.Add(2*time.Second), at.Add(2*time.Second), 3
		if ok, err := s.CompareLease(ctx, released, 2, nil); err != nil || ok {
			t.Fatalf("release after the adoption: %v %v, want refused", ok, err)
		}
		got, err := s.Lease(ctx, "La.x")
		if err != nil || got.State != "active" || got.Version != 3 {
			t.Fatalf("stored %+v %v, want active at version 3", got, err)
		}
		// Released (as the workflow writes it), the key is free again.
		released.Version = 4
		if err := s.RecordLease(ctx, released, nil); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.TakeLease(ctx, directLease("Le.x", key, "T-3", at), nil, false); err != nil || !ok {
			t.Fatalf("take after release: %v %v", ok, err)
		}
	})
}
