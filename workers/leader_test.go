package workers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/activities/ssot/ssottest"
)

// Short lease timing for the tests; the waits below are bounded, not
// measured.
const (
	testTTL   = time.Second
	testRetry = 100 * time.Millisecond
)

func openLeaseStore(t *testing.T, u string) *ssot.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := ssot.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// crashable is a worker's lease that can die: once dead it neither
// renews nor releases, as a worker killed with kill -9.
type crashable struct {
	Lease
	dead atomic.Bool
}

func (c *crashable) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if c.dead.Load() {
		return false, errors.New("dead")
	}
	return c.Lease.Acquire(ctx, name, holder, ttl)
}

func (c *crashable) Release(ctx context.Context, name, holder string) error {
	if c.dead.Load() {
		return nil
	}
	return c.Lease.Release(ctx, name, holder)
}

// runs counts the jobs running and who started them.
type runs struct {
	mu      sync.Mutex
	running map[string]int
	started []string
	max     int
	changed chan struct{}
}

func newRuns() *runs { return &runs{running: map[string]int{}, changed: make(chan struct{}, 100)} }

func (r *runs) job(holder string) func(context.Context) error {
	return func(ctx context.Context) error {
		r.mu.Lock()
		r.running[holder]++
		r.started = append(r.started, holder)
		n := 0
		for _, c := range r.running {
			n += c
		}
		r.max = max(r.max, n)
		r.mu.Unlock()
		r.changed <- struct{}{}
		<-ctx.Done()
		r.mu.Lock()
		r.running[holder]--
		r.mu.Unlock()
		return nil
	}
}

func (r *runs) snapshot() (started []string, maxRunning int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.started...), r.max
}

// waitStarted waits, at most d, until n jobs have started.
func (r *runs) waitStarted(t *testing.T, n int, d time.Duration) []string {
	t.Helper()
	deadline := time.After(d)
	for {
		if s, _ := r.snapshot(); len(s) >= n {
			return s
		}
		select {
		case <-r.changed:
		case <-deadline:
			s, _ := r.snapshot()
			t.Fatalf("jobs started %v within %s, want %d", s, d, n)
		}
	}
}

func TestLeaderOneRunsAndTakesOverFromACrash(t *testing.T) {
	for _, e := range ssottest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			u := e.URL(t)
			r := newRuns()
			var (
				leases  = map[string]*crashable{}
				cancels = map[string]context.CancelFunc{}
				wg      sync.WaitGroup
				errs    = make(chan error, 2)
			)
			for _, h := range []string{"worker-a", "worker-b"} {
				leases[h] = &crashable{Lease: openLeaseStore(t, u)}
				ctx, cancel := context.WithCancel(context.Background())
				cancels[h] = cancel
				l := &Leader{Lease: leases[h], Name: LeaseTelegramPolling, Holder: h, TTL: testTTL, Retry: testRetry}
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- l.Run(ctx, r.job(h))
				}()
			}
			t.Cleanup(func() {
				for _, c := range cancels {
					c()
				}
				wg.Wait()
			})

			first := r.waitStarted(t, 1, 30*time.Second)[0]
			// Over more than a TTL of renewals and retries the other worker
			// never starts: a lease that is renewed is never taken over.
			time.Sleep(3 * testTTL / 2)
			if started, most := r.snapshot(); len(started) != 1 || most != 1 {
				t.Fatalf("jobs started %v, at most %d at once; want one", started, most)
			}

			// The holder crashes: no renewal, no release.
			leases[first].dead.Store(true)
			cancels[first]()
			crashed := time.Now()
			started := r.waitStarted(t, 2, 30*time.Second)
			took := time.Since(crashed)
			if started[1] == first {
				t.Fatalf("jobs started %v: the crashed worker ran again", started)
			}
			if _, most := r.snapshot(); most != 1 {
				t.Fatalf("%d jobs ran at once", most)
			}
			t.Logf("takeover %s after the crash (ttl %s, retry %s)", took, testTTL, testRetry)
			for range 2 {
				select {
				case err := <-errs:
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
				default:
				}
			}
		})
	}
}

func TestLeaderHandsOverOnShutdown(t *testing.T) {
	for _, e := range ssottest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			u := e.URL(t)
			db := openLeaseStore(t, u)
			r := newRuns()
			// The first worker alone: it takes the lease and stops cleanly.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			a := &Leader{Lease: db, Name: LeaseSlackSocket, Holder: "worker-a", TTL: time.Minute, Retry: testRetry}
			go func() { done <- a.Run(ctx, r.job("worker-a")) }()
			r.waitStarted(t, 1, 30*time.Second)
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// Its lease lasts a minute, but it released it: the second
			// worker starts at its first try.
			ctx, cancel = context.WithCancel(context.Background())
			defer cancel()
			b := &Leader{Lease: openLeaseStore(t, u), Name: LeaseSlackSocket, Holder: "worker-b", TTL: time.Minute, Retry: time.Hour}
			go func() { done <- b.Run(ctx, r.job("worker-b")) }()
			if started := r.waitStarted(t, 2, 30*time.Second); started[1] != "worker-b" {
				t.Fatalf("jobs started %v", started)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLeaderJobFailureReleasesAndReturns(t *testing.T) {
	u := ssottest.Engines()[0].URL(t)
	db := openLeaseStore(t, u)
	boom := errors.New("socket mode: app_token is required")
	l := &Leader{Lease: db, Name: LeaseSlackSocket, Holder: "worker-a", TTL: time.Minute, Retry: testRetry}
	err := l.Run(context.Background(), func(context.Context) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want the job's error", err)
	}
	if h, err := db.LeaseHolder(context.Background(), LeaseSlackSocket); err != nil || h != "" {
		t.Fatalf("holder after the job failed: %q %v, want none", h, err)
	}
}
