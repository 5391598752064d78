package lease

import (
	"context"
	"github.com/ampflow/ampflow/amp/lease"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// expiries is a store of direct leases for the sweeper: each lease's
// expiry, and the virtual time a sweep ended it.
type expiries struct {
	mu     sync.Mutex
	active map[string]time.Time
	swept  map[string]time.Time
	cutoff []time.Time
}

func (e *expiries) set(id string, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active[id] = at
}

func (e *expiries) sweep(_ context.Context, in lease.SweepRequest) (lease.SweepResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cutoff = append(e.cutoff, in.Cutoff)
	var out lease.SweepResult
	for _, id := range slices.Sorted(maps.Keys(e.active)) {
		at := e.active[id]
		if !at.After(in.Cutoff) {
			e.swept[id] = in.Cutoff
			delete(e.active, id)
			out.Expired++
			continue
		}
		if out.Next.IsZero() || at.Before(out.Next) {
			out.Next = at
		}
	}
	return out, nil
}

func (e *expiries) sweptAt(id string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.swept[id]
}

func TestSweeper(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	e := &expiries{active: map[string]time.Time{}, swept: map[string]time.Time{}}
	env.RegisterActivityWithOptions(e.sweep, activity.RegisterOptions{Name: lease.ActivitySweep})
	env.RegisterWorkflow(Sweeper)
	start := env.Now()
	at := func(d time.Duration) time.Time { return start.Add(d) }
	signal := func(after time.Duration, id string, expiry time.Duration, send bool) {
		env.RegisterDelayedCallback(func() {
			e.set(id, at(expiry))
			if send {
				env.SignalWorkflow(SignalExpiry, ExpirySignal{At: at(expiry)})
			}
		}, after)
	}
	// A expires at 20s, signalled; C at 12s, signalled, wakes the sweeper
	// early; A is renewed to 100s meanwhile, and B (25s) is taken by A's
	// process after the sweep at 12s without a signal, its process's
	// promise (20s) being ahead: the sweeper still wakes at 20s and sees B.
	signal(0, "A", 20*time.Second, true)
	signal(5*time.Second, "C", 12*time.Second, true)
	signal(8*time.Second, "A", 100*time.Second, false)
	signal(15*time.Second, "B", 25*time.Second, false)
	// D's signal was lost: the idle sweep ends it within IdleSweep.
	signal(110*time.Second, "D", 120*time.Second, false)
	env.RegisterDelayedCallback(func() { env.CancelWorkflow() }, 10*time.Minute)
	env.ExecuteWorkflow(Sweeper, SweeperInput{})
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("workflow ended with %v, want cancelled", err)
	}
	for id, want := range map[string]time.Duration{"C": 12 * time.Second, "B": 25 * time.Second, "A": 100 * time.Second} {
		if got := e.sweptAt(id); !got.Equal(at(want)) {
			t.Errorf("%s swept at %s, want at its expiry %s", id, got.Sub(start), want)
		}
	}
	if got := e.sweptAt("D"); got.IsZero() || got.Before(at(120*time.Second)) || got.After(at(120*time.Second+IdleSweep)) {
		t.Errorf("D (no signal) swept at %s, want within %s of 2m0s", got.Sub(start), IdleSweep)
	}
}
