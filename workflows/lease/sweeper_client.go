package lease

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// Expiries wakes the namespace's lease sweeper for the leases this
// process takes directly in the store. Due is called after a take has
// committed and returns at once: the signal, a signal-with-start that
// starts the sweeper when none runs, goes in the background, and only
// when the sweeper may not be awake by the lease's expiry already.
type Expiries struct {
	Temporal  client.Client
	TaskQueue string
	Log       *slog.Logger

	mu sync.Mutex
	// promised is the expiry this process signalled last; while it is
	// ahead, the sweeper is awake at it and reads every lease taken
	// before then, so a lease expiring later needs no signal.
	promised time.Time
	wg       sync.WaitGroup
}

// signalAttempts bounds the tries of one signal; after them the sweeper's
// IdleSweep still ends the lease.
const signalAttempts = 3

// Due tells the sweeper a lease expires at at.
func (e *Expiries) Due(at time.Time) {
	if e == nil || e.Temporal == nil {
		return
	}
	e.mu.Lock()
	if e.promised.After(time.Now()) && !at.Before(e.promised) {
		e.mu.Unlock()
		return
	}
	e.promised = at
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		var err error
		for i := range signalAttempts {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = e.signal(ctx, at)
			cancel()
			if err == nil {
				return
			}
			time.Sleep(time.Duration(i+1) * 200 * time.Millisecond)
		}
		e.mu.Lock()
		if e.promised.Equal(at) {
			e.promised = time.Time{}
		}
		e.mu.Unlock()
		if e.Log != nil {
			e.Log.Warn("waking the lease sweeper", "expires_at", at, "error", err)
		}
	}()
}

// Ensure starts the sweeper, or wakes it to sweep now: a worker starting
// calls it, so leases taken before a crash end at their expiry.
func (e *Expiries) Ensure(ctx context.Context) error {
	if err := e.signal(ctx, time.Time{}); err != nil {
		return fmt.Errorf("starting the lease sweeper: %w", err)
	}
	return nil
}

// Wait waits for the signals in flight (for tests and a clean stop).
func (e *Expiries) Wait() { e.wg.Wait() }

func (e *Expiries) signal(ctx context.Context, at time.Time) error {
	_, err := e.Temporal.SignalWithStartWorkflow(ctx, SweeperWorkflowID(), SignalExpiry, ExpirySignal{At: at},
		client.StartWorkflowOptions{
			ID:                       SweeperWorkflowID(),
			TaskQueue:                e.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		}, SweeperWorkflowType, SweeperInput{})
	return err
}
