// Package lease is the lease room: one Temporal workflow per resource key
// holds that key for one agent at a time, renewed by the holder's
// heartbeats and released by the holder, an admin, or a durable timer at
// last_heartbeat + ttl. Acquisition is an update-with-start on the key's
// workflow id, so two workers racing for a key are ordered by Temporal.
package lease

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/ampflow/ampflow/amp/lease"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/workflows/decide"
)

type leaseWF struct {
	key     string
	cur     *lease.Lease
	version int64
	last    *lease.Lease
	// queue holds the workflows waiting for the key, first come first.
	queue []lease.Waiter
	// recording is set while a change is being written: changes are
	// written one at a time, in order, so a take never finds in the store
	// a lease this workflow has ended but not yet written as ended.
	recording bool
}

// Workflow holds one resource key for one agent until its lease is
// released or expires, and then ends.
func Workflow(ctx workflow.Context, in lease.Input) (lease.Result, error) {
	if err := lease.CheckKey(in.ResourceKey); err != nil {
		return lease.Result{}, temporal.NewNonRetryableApplicationError(err.Error(), lease.ErrInvalid, nil)
	}
	l := &leaseWF{key: in.ResourceKey}
	if in.Carried != nil {
		l.cur, l.version, l.queue = in.Carried.Current, in.Carried.Version, in.Carried.Queue
	}
	if err := l.setup(ctx); err != nil {
		return lease.Result{}, err
	}
	return l.run(ctx)
}

func (l *leaseWF) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, lease.QueryState, func() (lease.Lease, error) {
		if l.cur != nil {
			return *l.cur, nil
		}
		if l.last != nil {
			return *l.last, nil
		}
		return lease.Lease{ResourceKey: l.key, State: lease.StateReleased}, nil
	}); err != nil {
		return fmt.Errorf("registering %s: %w", lease.QueryState, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, lease.UpdateAcquire, l.acquire,
		workflow.UpdateHandlerOptions{Validator: l.validateAcquire}); err != nil {
		return fmt.Errorf("registering %s: %w", lease.UpdateAcquire, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, lease.UpdateRenew, l.renew,
		workflow.UpdateHandlerOptions{Validator: l.validateRenew}); err != nil {
		return fmt.Errorf("registering %s: %w", lease.UpdateRenew, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, lease.UpdateRelease, l.release,
		workflow.UpdateHandlerOptions{Validator: l.validateRelease}); err != nil {
		return fmt.Errorf("registering %s: %w", lease.UpdateRelease, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, lease.UpdateWait, l.wait,
		workflow.UpdateHandlerOptions{Validator: l.validateWait}); err != nil {
		return fmt.Errorf("registering %s: %w", lease.UpdateWait, err)
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, lease.UpdateLeave, l.leave,
		workflow.UpdateHandlerOptions{Validator: l.validateLeave}); err != nil {
		return fmt.Errorf("registering %s: %w", lease.UpdateLeave, err)
	}
	return nil
}

func (l *leaseWF) run(ctx workflow.Context) (lease.Result, error) {
	for {
		if l.cur == nil {
			// Free: the run ends once its handlers are done, and the next
			// acquire starts a new run (an acquire meeting the run as it
			// ends is retried by Client.Acquire). A free key costs the
			// server nothing.
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return lease.Result{}, err
			}
			if l.cur == nil {
				return lease.Result{Last: l.last}, nil
			}
			continue
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return lease.Result{}, err
			}
			return lease.Result{}, workflow.NewContinueAsNewError(ctx, lease.WorkflowType,
				lease.Input{ResourceKey: l.key, Carried: &lease.Carried{Current: l.cur, Version: l.version, Queue: l.queue}})
		}
		// A durable timer to the expiry; any change (a renewal, a release)
		// wakes the loop to set it again.
		v := l.version
		wait := l.cur.ExpiresAt.Sub(workflow.Now(ctx))
		if wait > 0 {
			changed, err := waitUntil(ctx, wait, func() bool { return l.version != v })
			if err != nil {
				return lease.Result{}, err
			}
			if changed {
				continue
			}
		}
		if l.cur != nil && !workflow.Now(ctx).Before(l.cur.ExpiresAt) {
			// The key is free whether or not the record is written; the
			// failure is logged and the workflow carries on.
			if err := l.end(ctx, lease.ReasonExpired, lease.StateExpired, lease.EventAutoReleased); err != nil {
				workflow.GetLogger(ctx).Error("recording an auto-release", "resource_key", l.key, "error", err)
			}
			if err := l.handOff(ctx); err != nil {
				workflow.GetLogger(ctx).Error("handing the key to its next waiter", "resource_key", l.key, "error", err)
			}
		}
	}
}

// waitUntil waits for cond or for d, and cancels its timer when cond
// comes first (workflow.AwaitWithTimeout leaves it to fire): a renewal
// replaces the lease's timer rather than adding one, so the server holds
// one timer per lease. Measured on the dev server, a stale timer firing
// just before the one that counts delayed that one by a second.
func waitUntil(ctx workflow.Context, d time.Duration, cond func() bool) (bool, error) {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, d)
	if err := workflow.Await(ctx, func() bool { return cond() || timer.IsReady() }); err != nil {
		return false, err
	}
	return cond(), nil
}

func (l *leaseWF) validateAcquire(req lease.AcquireRequest) error {
	if err := lease.CheckAgent(req.AgentID); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), lease.ErrInvalid, nil)
	}
	if err := lease.CheckTTL("ttl_seconds", req.TTLSeconds); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), lease.ErrInvalid, nil)
	}
	return nil
}

func (l *leaseWF) acquire(ctx workflow.Context, req lease.AcquireRequest) (lease.AcquireResult, error) {
	now := workflow.Now(ctx)
	if l.cur != nil && l.cur.AgentID != req.AgentID {
		return lease.AcquireResult{Conflict: &lease.Conflict{
			Holder: l.cur.AgentID, LeaseID: l.cur.LeaseID,
			RetryAfterMS: max(0, l.cur.ExpiresAt.Sub(now).Milliseconds()),
		}}, nil
	}
	out, adopted, err := l.take(ctx, req.AgentID, req.TTLSeconds)
	if err != nil {
		return lease.AcquireResult{}, err
	}
	if adopted {
		return l.acquire(ctx, req)
	}
	return lease.AcquireResult{Lease: &out}, nil
}

// take gives the key to agent, or renews agent's lease on it, and
// records the change. A key found held directly in the store is adopted
// instead (l.cur becomes that lease) and answered with adopted true; the
// caller then treats the key as held.
func (l *leaseWF) take(ctx workflow.Context, agent string, ttlSeconds int) (lease.Lease, bool, error) {
	now := workflow.Now(ctx)
	event := lease.EventRenewed
	fresh := l.cur == nil
	if fresh {
		var nonce string
		if err := workflow.SideEffect(ctx, func(workflow.Context) any {
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			return hex.EncodeToString(b)
		}).Get(&nonce); err != nil {
			return lease.Lease{}, false, err
		}
		l.cur = &lease.Lease{LeaseID: lease.NewLeaseID(l.key, nonce), ResourceKey: l.key, AgentID: agent,
			State: lease.StateActive, AcquiredAt: now, AutoRelease: true}
		event = lease.EventAcquired
	}
	l.cur.TTLSeconds = ttlSeconds
	l.cur.LastHeartbeat = now
	l.cur.ExpiresAt = now.Add(time.Duration(ttlSeconds) * time.Second)
	out := l.bump()
	held, err := l.recordChange(ctx, out, event, false, fresh)
	if err != nil {
		return lease.Lease{}, false, err
	}
	if held != nil {
		l.cur = held
		l.version = max(l.version, held.Version)
		return *held, true, nil
	}
	return out, false, nil
}

func (l *leaseWF) validateRenew(req lease.RenewRequest) error {
	if err := lease.CheckTTL("ttl", req.TTLSeconds); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), lease.ErrInvalid, nil)
	}
	return l.held(req.LeaseID, req.AgentID, false)
}

func (l *leaseWF) renew(ctx workflow.Context, req lease.RenewRequest) (lease.Lease, error) {
	if err := l.held(req.LeaseID, req.AgentID, false); err != nil {
		return lease.Lease{}, err
	}
	now := workflow.Now(ctx)
	l.cur.TTLSeconds = req.TTLSeconds
	l.cur.LastHeartbeat = now
	l.cur.ExpiresAt = now.Add(time.Duration(req.TTLSeconds) * time.Second)
	out := l.bump()
	return out, l.record(ctx, out, lease.EventRenewed, false)
}

func (l *leaseWF) validateRelease(req lease.ReleaseRequest) error {
	if err := l.validateReason(req.Reason); err != nil {
		return err
	}
	return l.held(req.LeaseID, req.AgentID, req.Admin)
}

func (l *leaseWF) validateReason(reason string) error {
	switch reason {
	case "", lease.ReasonReleased, lease.ReasonAdmin, lease.ReasonAgentInactive, lease.ReasonAgentRecovered, lease.ReasonTaskEnded:
		return nil
	}
	return temporal.NewNonRetryableApplicationError("reason: unknown "+reason, lease.ErrInvalid, nil)
}

func (l *leaseWF) release(ctx workflow.Context, req lease.ReleaseRequest) (lease.Lease, error) {
	if err := l.held(req.LeaseID, req.AgentID, req.Admin); err != nil {
		return lease.Lease{}, err
	}
	// A release frees the key: only one signed where ampflow
	// authenticated the holder or the admin (a raw Temporal update naming
	// either is refused, and the refusal recorded).
	a, err := req.SignedAs()
	if err == nil {
		err = decide.VerifySigned(ctx, lease.WorkflowID(l.key), a)
	}
	if err != nil {
		return lease.Lease{}, temporal.NewNonRetryableApplicationError("release refused: "+err.Error(), lease.ErrNotHolder, nil)
	}
	if err := l.held(req.LeaseID, req.AgentID, req.Admin); err != nil {
		return lease.Lease{}, err
	}
	reason, event := req.Reason, lease.EventAutoReleased
	switch {
	case reason == "" && req.Admin && req.AgentID != l.cur.AgentID:
		reason, event = lease.ReasonAdmin, lease.EventReleased
	case reason == "" || reason == lease.ReasonReleased:
		reason, event = lease.ReasonReleased, lease.EventReleased
	case reason == lease.ReasonAdmin:
		event = lease.EventReleased
	}
	if err := l.end(ctx, reason, lease.StateReleased, event); err != nil {
		return lease.Lease{}, err
	}
	out := *l.last
	return out, l.handOff(ctx)
}

// held refuses a request for a lease that is not the current one or, unless
// admin, not agent's.
func (l *leaseWF) held(leaseID, agent string, admin bool) error {
	if l.cur == nil || l.cur.LeaseID != leaseID {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("lease %s is not held", leaseID), lease.ErrNotHeld, nil)
	}
	if !admin && l.cur.AgentID != agent {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("lease %s is held by %s, not %s", leaseID, l.cur.AgentID, agent), lease.ErrNotHolder, nil)
	}
	return nil
}

// end frees the key: the lease is kept as last with its reason, and the
// holder is told unless it released the lease itself or its task ended.
func (l *leaseWF) end(ctx workflow.Context, reason, state, event string) error {
	l.cur.State = state
	l.cur.Reason = reason
	l.cur.ReleasedAt = workflow.Now(ctx)
	out := l.bump()
	l.last, l.cur = &out, nil
	return l.record(ctx, out, event, reason != lease.ReasonReleased && reason != lease.ReasonTaskEnded)
}

func (l *leaseWF) bump() lease.Lease {
	l.version++
	l.cur.Version = l.version
	return *l.cur
}

// record writes a change as a local activity: in the same workflow task,
// with no round trip through the server, so an acquire is answered after
// one workflow task and the server's work per lease stays small with
// thousands held.
func (l *leaseWF) record(ctx workflow.Context, ls lease.Lease, event string, notify bool) error {
	_, err := l.recordChange(ctx, ls, event, notify, false)
	return err
}

// recordChange is record; with take, of a new lease, which the store
// writes only when it holds no active lease of the key, answering the
// lease it holds otherwise.
func (l *leaseWF) recordChange(ctx workflow.Context, ls lease.Lease, event string, notify, take bool) (*lease.Lease, error) {
	if err := workflow.Await(ctx, func() bool { return !l.recording }); err != nil {
		return nil, err
	}
	l.recording = true
	defer func() { l.recording = false }()
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 5 * time.Second},
	})
	ch := lease.Change{Lease: ls, Event: event, Notify: notify, EventID: fmt.Sprintf("%s-v%d", ls.LeaseID, ls.Version), Take: take}
	var out lease.ChangeResult
	if err := workflow.ExecuteLocalActivity(lctx, lease.ActivityChanged, ch).Get(ctx, &out); err != nil {
		return nil, fmt.Errorf("recording %s of lease %s: %w", event, ls.LeaseID, err)
	}
	return out.Held, nil
}
