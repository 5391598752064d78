package ssot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestLeaseOneHolderAcrossWorkers(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		workers := []*DB{s, openStore(t, u), openStore(t, u)}
		for round := range 10 {
			name := fmt.Sprintf("telegram-polling-%d", round)
			var (
				mu   sync.Mutex
				held []int
				errs []error
				wg   sync.WaitGroup
			)
			start := make(chan struct{})
			for w, db := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					ok, err := db.Acquire(ctx, name, fmt.Sprintf("worker-%d", w), time.Minute)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
					} else if ok {
						held = append(held, w)
					}
				}()
			}
			close(start)
			wg.Wait()
			if len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			if len(held) != 1 {
				t.Fatalf("%s held by workers %v, want exactly one", name, held)
			}
			holder, err := s.LeaseHolder(ctx, name)
			if err != nil || holder != fmt.Sprintf("worker-%d", held[0]) {
				t.Fatalf("holder %q %v, want worker-%d", holder, err, held[0])
			}
		}
	})
}

func TestLeaseRenewReleaseExpire(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		other := openStore(t, u)
		acquire := func(db *DB, holder string, ttl time.Duration) bool {
			t.Helper()
			ok, err := db.Acquire(ctx, "slack-socket", holder, ttl)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !acquire(s, "a", time.Minute) {
			t.Fatal("a free lease was not taken")
		}
		if !acquire(s, "a", time.Minute) {
			t.Fatal("the holder could not renew")
		}
		if acquire(other, "b", time.Minute) {
			t.Fatal("b took a lease a holds")
		}
		// Release by another than the holder changes nothing.
		if err := other.Release(ctx, "slack-socket", "b"); err != nil {
			t.Fatal(err)
		}
		if acquire(other, "b", time.Minute) {
			t.Fatal("b took a lease a holds after b's release")
		}
		if err := s.Release(ctx, "slack-socket", "a"); err != nil {
			t.Fatal(err)
		}
		if h, _ := s.LeaseHolder(ctx, "slack-socket"); h != "" {
			t.Fatalf("holder after release: %q", h)
		}
		if !acquire(other, "b", time.Minute) {
			t.Fatal("b did not take a released lease")
		}

		// b dies holding a short lease: a takes it once it expired, by the
		// database's clock. This waits at most a bounded time.
		if !acquire(other, "b", 300*time.Millisecond) {
			t.Fatal("b could not shorten its own lease")
		}
		deadline := time.Now().Add(30 * time.Second)
		for !acquire(s, "a", time.Minute) {
			if time.Now().After(deadline) {
				t.Fatal("an expired lease was never taken over")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if acquire(other, "b", time.Minute) {
			t.Fatal("b renewed a lease it had lost")
		}

		var inv *InvalidError
		if _, err := s.Acquire(ctx, "x", "a", 0); !errors.As(err, &inv) || inv.Field != "lease ttl" {
			t.Fatalf("zero ttl: %v", err)
		}
		if _, err := s.Acquire(ctx, "x", "", time.Second); !errors.As(err, &inv) || inv.Field != "lease holder" {
			t.Fatalf("no holder: %v", err)
		}
	})
}
