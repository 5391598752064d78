package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/workflows/lease"
	"github.com/ampflow/ampflow/workflows/task"
)

// Client is the way to the lease workflows a task's branch lease lives in
// (*lease.Client).
type Client interface {
	AcquireOrQueue(ctx context.Context, key string, req lease.WaitRequest) (lease.AcquireResult, error)
	Renew(ctx context.Context, req lease.RenewRequest) (lease.Lease, error)
	Leave(ctx context.Context, key string, req lease.LeaveRequest) (lease.LeaveResult, error)
}

// Branches holds tasks' branch leases in the lease workflows: the task
// activities' activities.BranchLeases.
type Branches struct {
	Client Client
}

var _ activities.BranchLeases = Branches{}

func branchLease(l lease.Lease) *task.BranchLease {
	return &task.BranchLease{LeaseID: l.LeaseID, ResourceKey: l.ResourceKey, ExpiresAt: l.ExpiresAt}
}

func ttlSeconds(d time.Duration) int {
	return max(int(lease.MinTTL/time.Second), min(int(d/time.Second), int(lease.MaxTTL/time.Second)))
}

// Acquire takes the task's branch lease, or queues the task for it: the
// lease workflow signals the task (task.SignalLeaseGranted) when the
// branch passes to it. Asking again keeps the task's place.
func (b Branches) Acquire(ctx context.Context, in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
	key := activities.BranchKey(in.Repo, in.Branch)
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
