package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/amp/task"
)

// Client is the way to the lease workflows a task's branch lease lives in
// (*workflows/lease.Client).
type Client interface {
	AcquireOrQueue(ctx context.Context, key string, req lease.WaitRequest) (lease.AcquireResult, error)
	Renew(ctx context.Context, req lease.RenewRequest) (lease.Lease, error)
	Leave(ctx context.Context, key string, req lease.LeaveRequest) (lease.LeaveResult, error)
}

// Branches holds tasks' branch leases: the task activities'
// activities.BranchLeases. A branch nobody holds is taken directly in the
// store, in one transaction and without a lease workflow; a held branch
// queues the task in the key's lease workflow, which adopts the store's
// lease (see ssot.TakeLease), and from then on the lease's changes go
// through the workflow.
type Branches struct {
	Client Client
	// Store, when set, takes free branches directly.
	Store MeshLeases
	// Expiry, when set, wakes the lease sweeper for a branch taken
	// directly: it ends the lease at its expiry when the task that held it
	// cannot (terminated from outside Temporal, or no worker renewing).
	Expiry Expiry
}

var (
	_ activities.BranchLeases = Branches{}
	_ activities.LeaseChanges = Branches{}
)

func branchLease(l lease.Lease) *task.BranchLease {
	return &task.BranchLease{LeaseID: l.LeaseID, ResourceKey: l.ResourceKey, ExpiresAt: l.ExpiresAt}
}

func directLease(l ssot.MeshLease) *task.BranchLease {
	return &task.BranchLease{LeaseID: l.LeaseID, ResourceKey: l.ResourceKey, ExpiresAt: l.ExpiresAt,
		Version: l.Version, Direct: true, AcquiredAt: l.AcquiredAt}
}

// take takes key for the task directly in the store when no lease of it
// is active, or answers nil.
func (b Branches) take(ctx context.Context, key string, in activities.BranchLeaseInput) (*task.BranchLease, error) {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	ttl := ttlSeconds(in.TTL)
	l := lease.Lease{LeaseID: lease.NewLeaseID(key, hex.EncodeToString(nonce)), ResourceKey: key, AgentID: in.TaskID,
		State: lease.StateActive, TTLSeconds: ttl, AcquiredAt: now, LastHeartbeat: now,
		ExpiresAt: now.Add(time.Duration(ttl) * time.Second), AutoRelease: true, Version: 1}
	row, events, err := changeRow(lease.Change{Lease: l, Event: lease.EventAcquired, EventID: fmt.Sprintf("%s-v%d", l.LeaseID, l.Version)})
	if err != nil {
		return nil, err
	}
	held, taken, err := b.Store.TakeLease(ctx, row, events, false)
	if err != nil || !taken {
		return nil, err
	}
	if held.InWorkflow {
		return nil, nil // the task's own, held by its workflow: asked there
	}
	if b.Expiry != nil && held.LeaseID == l.LeaseID {
		b.Expiry.Due(held.ExpiresAt)
	}
	return directLease(held), nil
}

// change writes a change of the task's direct lease, at the version the
// task holds; false when the lease has changed meanwhile.
func (b Branches) change(ctx context.Context, in activities.BranchLeaseInput, event string, set func(*lease.Lease)) (*task.BranchLease, bool, error) {
	c, err := changeOf(in, time.Now(), event, set)
	if err != nil {
		return nil, false, err
	}
	ok, err := b.Store.CompareLease(ctx, c.Lease, c.From, c.Events)
	if err != nil || !ok {
		return nil, false, err
	}
	return directLease(c.Lease), true, nil
}

// changeOf is a change at now of the task's direct lease, as the store
// compares and sets it.
func changeOf(in activities.BranchLeaseInput, now time.Time, event string, set func(*lease.Lease)) (ssot.LeaseChange, error) {
	now = now.UTC().Truncate(time.Microsecond)
	key := activities.BranchKey(in.Repo, in.Branch)
	l := lease.Lease{LeaseID: in.LeaseID, ResourceKey: key, AgentID: in.TaskID, State: lease.StateActive,
		TTLSeconds: ttlSeconds(in.TTL), AcquiredAt: in.AcquiredAt, LastHeartbeat: now, AutoRelease: true, Version: in.Version + 1}
	set(&l)
	row, events, err := changeRow(lease.Change{Lease: l, Event: event, EventID: fmt.Sprintf("%s-v%d", l.LeaseID, l.Version)})
	if err != nil {
		return ssot.LeaseChange{}, err
	}
	return ssot.LeaseChange{Lease: row, From: in.Version, Events: events}, nil
}

// released ends the lease as the task ends.
func released(in activities.BranchLeaseInput) func(*lease.Lease) {
	return func(l *lease.Lease) {
		l.State, l.Reason, l.ReleasedAt, l.ExpiresAt = lease.StateReleased, lease.ReasonTaskEnded, l.LastHeartbeat, in.ExpiresAt
	}
}

// ReleaseChange implements activities.LeaseChanges: the release of the
// task's direct lease at in.ReleasedAt, for the task's last record batch
// to write in its transaction.
func (b Branches) ReleaseChange(in activities.BranchLeaseInput) (ssot.LeaseChange, error) {
	at := in.ReleasedAt
	if at.IsZero() {
		at = time.Now()
	}
	c, err := changeOf(in, at, lease.EventReleased, released(in))
	if err != nil {
		return ssot.LeaseChange{}, fmt.Errorf("releasing lease %s of %s: %w", in.LeaseID, in.TaskID, err)
	}
	return c, nil
}

func ttlSeconds(d time.Duration) int {
	return max(int(lease.MinTTL/time.Second), min(int(d/time.Second), int(lease.MaxTTL/time.Second)))
}

// Acquire takes the task's branch lease, or queues the task for it: the
// lease workflow signals the task (task.SignalLeaseGranted) when the
// branch passes to it. Asking again keeps the task's place.
func (b Branches) Acquire(ctx context.Context, in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
	key := activities.BranchKey(in.Repo, in.Branch)
	if b.Store != nil {
		l, err := b.take(ctx, key, in)
		if err != nil {
			return activities.BranchLeaseResult{}, fmt.Errorf("branch lease: %w", err)
		}
		if l != nil {
			return activities.BranchLeaseResult{Lease: l}, nil
		}
	}
	out, err := b.Client.AcquireOrQueue(ctx, key, lease.WaitRequest{AgentID: in.TaskID, TTLSeconds: ttlSeconds(in.TTL),
		WorkflowID: task.WorkflowID(in.TaskID), Signal: task.SignalLeaseGranted})
	if err != nil {
		return activities.BranchLeaseResult{}, leaseErr(err)
	}
	if out.Lease != nil {
		return activities.BranchLeaseResult{Lease: branchLease(*out.Lease)}, nil
	}
	res := activities.BranchLeaseResult{Queued: out.Queued}
	if out.Conflict != nil {
		res.Holder = out.Conflict.Holder
	}
	return res, nil
}

// Renew renews the task's branch lease; a lease that is no longer the
// task's comes back as Lost, with why.
func (b Branches) Renew(ctx context.Context, in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
	if in.Direct && b.Store != nil {
		l, ok, err := b.change(ctx, in, lease.EventRenewed, func(l *lease.Lease) {
			l.ExpiresAt = l.LastHeartbeat.Add(time.Duration(l.TTLSeconds) * time.Second)
		})
		if err != nil {
			return activities.BranchLeaseResult{}, fmt.Errorf("branch lease: %w", err)
		}
		if ok {
			return activities.BranchLeaseResult{Lease: l}, nil
		}
	}
	l, err := b.Client.Renew(ctx, lease.RenewRequest{LeaseID: in.LeaseID, AgentID: in.TaskID, TTLSeconds: ttlSeconds(in.TTL)})
	var ref *lease.RefusedError
	if errors.As(err, &ref) && (ref.Type == lease.ErrNotHeld || ref.Type == lease.ErrNotHolder) {
		return activities.BranchLeaseResult{Lost: ref.Message}, nil
	}
	if err != nil {
		return activities.BranchLeaseResult{}, leaseErr(err)
	}
	return activities.BranchLeaseResult{Lease: branchLease(l)}, nil
}

// Release gives the task's branch lease up, or its place in the queue, as
// the task ends; the next task waiting gets the branch.
func (b Branches) Release(ctx context.Context, in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
	if in.Direct && b.Store != nil {
		_, ok, err := b.change(ctx, in, lease.EventReleased, released(in))
		if err != nil {
			return activities.BranchLeaseResult{}, fmt.Errorf("branch lease: %w", err)
		}
		if ok {
			return activities.BranchLeaseResult{}, nil
		}
	}
	_, err := b.Client.Leave(ctx, activities.BranchKey(in.Repo, in.Branch), lease.LeaveRequest{AgentID: in.TaskID, Reason: lease.ReasonTaskEnded})
	if err != nil {
		return activities.BranchLeaseResult{}, leaseErr(err)
	}
	return activities.BranchLeaseResult{}, nil
}

// leaseErr makes a refusal non-retryable; anything else is retried.
func leaseErr(err error) error {
	var ref *lease.RefusedError
	if errors.As(err, &ref) {
		return temporal.NewNonRetryableApplicationError(ref.Message, ref.Type, nil)
	}
	return fmt.Errorf("branch lease: %w", err)
}
