package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/lease"
)

// Workflows reaches the lease workflows, for the leases they hold
// (*workflows/lease.Client).
type Workflows interface {
	Acquire(ctx context.Context, key string, req lease.AcquireRequest) (lease.AcquireResult, error)
	Renew(ctx context.Context, req lease.RenewRequest) (lease.Lease, error)
	Release(ctx context.Context, req lease.ReleaseRequest) (lease.Lease, error)
}

// DirectLeases is what Direct reads and writes (*ssot.DB).
type DirectLeases interface {
	Lease(ctx context.Context, leaseID string) (ssot.MeshLease, error)
	TakeLease(ctx context.Context, l ssot.MeshLease, events []ssot.MeshEvent, adopt bool) (ssot.MeshLease, bool, error)
	CompareLease(ctx context.Context, l ssot.MeshLease, from int64, events []ssot.MeshEvent) (bool, error)
}

// Expiry wakes the lease sweeper for a lease taken directly
// (*workflows/lease.Expiries).
type Expiry interface{ Due(at time.Time) }

// Direct holds agents' leases (the API's POST /v1/leases) in the store:
// a free key is taken in one transaction and answered at once, and the
// sweeper (workflows/lease.Sweeper) ends it at its expiry; renewals and releases
// are compare-and-sets on the lease's row, its version the token. A key
// its lease workflow holds (a queue's, adopted) goes to the workflow, as
// does every change of such a lease.
type Direct struct {
	Workflows Workflows
	Store     DirectLeases
	Expiry    Expiry
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// directAttempts bounds the tries of a change that meets another.
const directAttempts = 5

func (d *Direct) now() time.Time {
	if d.Now != nil {
		return d.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func invalid(err error) error {
	return &lease.RefusedError{Type: lease.ErrInvalid, Message: err.Error()}
}

func notHeld(leaseID string) error {
	return &lease.RefusedError{Type: lease.ErrNotHeld, Message: fmt.Sprintf("lease %s is not held", leaseID)}
}

// Acquire takes key for req.AgentID when no lease of it is active, renews
// the agent's own, or answers the holder as a Conflict. An acquire
// retried after a crash finds the agent's lease and renews it: one lease,
// not two.
func (d *Direct) Acquire(ctx context.Context, key string, req lease.AcquireRequest) (lease.AcquireResult, error) {
	if err := lease.CheckKey(key); err != nil {
		return lease.AcquireResult{}, invalid(err)
	}
	if err := lease.CheckAgent(req.AgentID); err != nil {
		return lease.AcquireResult{}, invalid(err)
	}
	if err := lease.CheckTTL("ttl_seconds", req.TTLSeconds); err != nil {
		return lease.AcquireResult{}, invalid(err)
	}
	for range directAttempts {
		nonce := make([]byte, 8)
		if _, err := rand.Read(nonce); err != nil {
			return lease.AcquireResult{}, err
		}
		now := d.now()
		l := lease.Lease{LeaseID: lease.NewLeaseID(key, hex.EncodeToString(nonce)), ResourceKey: key, AgentID: req.AgentID,
			State: lease.StateActive, TTLSeconds: req.TTLSeconds, AcquiredAt: now, LastHeartbeat: now,
			ExpiresAt: now.Add(time.Duration(req.TTLSeconds) * time.Second), AutoRelease: true, Version: 1}
		row, events, err := changeRow(lease.Change{Lease: l, Event: lease.EventAcquired, EventID: fmt.Sprintf("%s-v%d", l.LeaseID, l.Version)})
		if err != nil {
			return lease.AcquireResult{}, err
		}
		held, taken, err := d.Store.TakeLease(ctx, row, events, false)
		switch {
		case err != nil:
			return lease.AcquireResult{}, fmt.Errorf("acquiring %s for %s: %w", key, req.AgentID, err)
		case held.InWorkflow:
			return d.Workflows.Acquire(ctx, key, req)
		case taken && held.LeaseID == l.LeaseID:
			d.due(l.ExpiresAt)
			return lease.AcquireResult{Lease: &l}, nil
		case !taken:
			// Counted from the answer, not from now: the holder may have
			// taken the key after this attempt began.
			return lease.AcquireResult{Conflict: &lease.Conflict{Holder: held.AgentID, LeaseID: held.LeaseID,
				RetryAfterMS: max(0, held.ExpiresAt.Sub(d.now()).Milliseconds())}}, nil
		}
		out, ok, err := d.renew(ctx, held, req.TTLSeconds, now)
		if err != nil {
			return lease.AcquireResult{}, fmt.Errorf("acquiring %s for %s: %w", key, req.AgentID, err)
		}
		if ok {
			return lease.AcquireResult{Lease: &out}, nil
		}
	}
	return lease.AcquireResult{}, fmt.Errorf("acquiring %s for %s: the lease changed under %d tries", key, req.AgentID, directAttempts)
}

// renew writes row renewed for ttlSeconds from now; false when it changed
// meanwhile.
func (d *Direct) renew(ctx context.Context, row ssot.MeshLease, ttlSeconds int, now time.Time) (lease.Lease, bool, error) {
	l := leaseOf(row)
	l.TTLSeconds, l.LastHeartbeat, l.Version = ttlSeconds, now, row.Version+1
	l.ExpiresAt = now.Add(time.Duration(ttlSeconds) * time.Second)
	next, events, err := changeRow(lease.Change{Lease: l, Event: lease.EventRenewed, EventID: fmt.Sprintf("%s-v%d", l.LeaseID, l.Version)})
	if err != nil {
		return lease.Lease{}, false, err
	}
	ok, err := d.Store.CompareLease(ctx, next, row.Version, events)
	return l, ok, err
}

// current reads the active direct lease leaseID, or answers why not:
// inWorkflow when its workflow holds it.
func (d *Direct) current(ctx context.Context, leaseID string) (row ssot.MeshLease, inWorkflow bool, err error) {
	row, err = d.Store.Lease(ctx, leaseID)
	switch {
	case errors.Is(err, ssot.ErrNotFound):
		return row, false, notHeld(leaseID)
	case err != nil:
		return row, false, fmt.Errorf("reading lease %s: %w", leaseID, err)
	case row.InWorkflow:
		return row, true, nil
	case row.State != lease.StateActive:
		return row, false, notHeld(leaseID)
	}
	return row, false, nil
}

// Renew is the holder's heartbeat.
func (d *Direct) Renew(ctx context.Context, req lease.RenewRequest) (lease.Lease, error) {
	if err := lease.CheckTTL("ttl", req.TTLSeconds); err != nil {
		return lease.Lease{}, invalid(err)
	}
	for range directAttempts {
		row, inWorkflow, err := d.current(ctx, req.LeaseID)
		if inWorkflow {
			return d.Workflows.Renew(ctx, req)
		}
		if err != nil {
			return lease.Lease{}, err
		}
		if row.AgentID != req.AgentID {
			return lease.Lease{}, &lease.RefusedError{Type: lease.ErrNotHolder,
				Message: fmt.Sprintf("lease %s is held by %s, not %s", req.LeaseID, row.AgentID, req.AgentID)}
		}
		out, ok, err := d.renew(ctx, row, req.TTLSeconds, d.now())
		if err != nil {
			return lease.Lease{}, fmt.Errorf("renewing lease %s: %w", req.LeaseID, err)
		}
		if ok {
			return out, nil
		}
	}
	return lease.Lease{}, fmt.Errorf("renewing lease %s: the lease changed under %d tries", req.LeaseID, directAttempts)
}

// Release ends a lease: its holder's, or any as an admin (the caller has
// authenticated the admin; a lease workflow's release is signed).
func (d *Direct) Release(ctx context.Context, req lease.ReleaseRequest) (lease.Lease, error) {
	reason, event := req.Reason, lease.EventAutoReleased
	switch reason {
	case "", lease.ReasonReleased:
		reason, event = lease.ReasonReleased, lease.EventReleased
	case lease.ReasonAdmin:
		event = lease.EventReleased
	case lease.ReasonAgentInactive, lease.ReasonAgentRecovered, lease.ReasonTaskEnded:
	default:
		return lease.Lease{}, invalid(fmt.Errorf("reason: unknown %s", reason))
	}
	for range directAttempts {
		row, inWorkflow, err := d.current(ctx, req.LeaseID)
		if inWorkflow {
			return d.Workflows.Release(ctx, req)
		}
		if err != nil {
			return lease.Lease{}, err
		}
		if row.AgentID != req.AgentID && !req.Admin {
			return lease.Lease{}, &lease.RefusedError{Type: lease.ErrNotHolder,
				Message: fmt.Sprintf("lease %s is held by %s, not %s", req.LeaseID, row.AgentID, req.AgentID)}
		}
		r, e := reason, event
		if req.Reason == "" && req.Admin && req.AgentID != row.AgentID {
			r, e = lease.ReasonAdmin, lease.EventReleased
		}
		l := leaseOf(row)
		l.State, l.Reason, l.ReleasedAt, l.Version = lease.StateReleased, r, d.now(), row.Version+1
		next, events, err := changeRow(lease.Change{Lease: l, Event: e, EventID: fmt.Sprintf("%s-v%d", l.LeaseID, l.Version),
			Notify: r != lease.ReasonReleased && r != lease.ReasonTaskEnded})
		if err != nil {
			return lease.Lease{}, err
		}
		ok, err := d.Store.CompareLease(ctx, next, row.Version, events)
		if err != nil {
			return lease.Lease{}, fmt.Errorf("releasing lease %s: %w", req.LeaseID, err)
		}
		if ok {
			return l, nil
		}
	}
	return lease.Lease{}, fmt.Errorf("releasing lease %s: the lease changed under %d tries", req.LeaseID, directAttempts)
}

func (d *Direct) due(at time.Time) {
	if d.Expiry != nil {
		d.Expiry.Due(at)
	}
}
