package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/workflows/lease"
	"github.com/ampflow/ampflow/workflows/task"
)

// BranchLeaser is the way to the lease workflows a task's branch lease
// lives in (*lease.Client).
type BranchLeaser interface {
	AcquireOrQueue(ctx context.Context, key string, req lease.WaitRequest) (lease.AcquireResult, error)
	Renew(ctx context.Context, req lease.RenewRequest) (lease.Lease, error)
	Leave(ctx context.Context, key string, req lease.LeaveRequest) (lease.LeaveResult, error)
}

// ErrNoLeases refuses a branch lease on a worker without a lease client.
const ErrNoLeases = "NoLeases"

// BranchLeaseInput names a task's branch lease. TTL is the lease's time to
// live; LeaseID, for a renewal, the lease held.
type BranchLeaseInput struct {
	TaskID  string        `json:"task_id"`
	Repo    string        `json:"repo"`
	Branch  string        `json:"branch"`
	TTL     time.Duration `json:"ttl,omitempty"`
	LeaseID string        `json:"lease_id,omitempty"`
}

// BranchLeaseResult is the lease held, or the holder the task waits for
// (Queued, its place in the queue), or Lost when a renewal found the
// lease no longer the task's.
type BranchLeaseResult struct {
	Lease  *task.BranchLease `json:"lease,omitempty"`
	Holder string            `json:"holder,omitempty"`
	Queued int               `json:"queued,omitempty"`
	Lost   string            `json:"lost,omitempty"`
}

// BranchKey is the resource key of a branch: task.BranchLeaseKey, with the
// repository path digested when the key would pass lease.MaxKeyLen.
func BranchKey(repo, branch string) string {
	key := task.BranchLeaseKey(repo, branch)
	if len(key) <= lease.MaxKeyLen {
		return key
	}
	sum := sha256.Sum256([]byte(repo))
	return task.BranchLeaseKey("sha256-"+hex.EncodeToString(sum[:12]), branch)
}

func branchLease(l lease.Lease) *task.BranchLease {
	return &task.BranchLease{LeaseID: l.LeaseID, ResourceKey: l.ResourceKey, ExpiresAt: l.ExpiresAt}
}

func ttlSeconds(d time.Duration) int {
	return max(int(lease.MinTTL/time.Second), min(int(d/time.Second), int(lease.MaxTTL/time.Second)))
}

// AcquireBranchLease takes the task's branch lease, or queues the task for
// it: the lease workflow signals the task (task.SignalLeaseGranted) when
// the branch passes to it. Asking again keeps the task's place.
func (a *Activities) AcquireBranchLease(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error) {
	if a.Leases == nil {
		return BranchLeaseResult{}, temporal.NewNonRetryableApplicationError("this worker has no lease client", ErrNoLeases, nil)
	}
	key := BranchKey(in.Repo, in.Branch)
	out, err := a.Leases.AcquireOrQueue(ctx, key, lease.WaitRequest{AgentID: in.TaskID, TTLSeconds: ttlSeconds(in.TTL),
		WorkflowID: task.WorkflowID(in.TaskID), Signal: task.SignalLeaseGranted})
	if err != nil {
		return BranchLeaseResult{}, leaseErr(err)
	}
	if out.Lease != nil {
		return BranchLeaseResult{Lease: branchLease(*out.Lease)}, nil
	}
	res := BranchLeaseResult{Queued: out.Queued}
	if out.Conflict != nil {
		res.Holder = out.Conflict.Holder
	}
	return res, nil
}

// RenewBranchLease renews the task's branch lease; a lease that is no
// longer the task's comes back as Lost, with why.
func (a *Activities) RenewBranchLease(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error) {
	if a.Leases == nil {
		return BranchLeaseResult{}, temporal.NewNonRetryableApplicationError("this worker has no lease client", ErrNoLeases, nil)
	}
	l, err := a.Leases.Renew(ctx, lease.RenewRequest{LeaseID: in.LeaseID, AgentID: in.TaskID, TTLSeconds: ttlSeconds(in.TTL)})
	var ref *lease.RefusedError
	if errors.As(err, &ref) && (ref.Type == lease.ErrNotHeld || ref.Type == lease.ErrNotHolder) {
		return BranchLeaseResult{Lost: ref.Message}, nil
	}
	if err != nil {
		return BranchLeaseResult{}, leaseErr(err)
	}
	return BranchLeaseResult{Lease: branchLease(l)}, nil
}

// ReleaseBranchLease gives the task's branch lease up, or its place in the
// queue, as the task ends; the next task waiting gets the branch.
func (a *Activities) ReleaseBranchLease(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error) {
	if a.Leases == nil {
		return BranchLeaseResult{}, temporal.NewNonRetryableApplicationError("this worker has no lease client", ErrNoLeases, nil)
	}
	_, err := a.Leases.Leave(ctx, BranchKey(in.Repo, in.Branch), lease.LeaveRequest{AgentID: in.TaskID, Reason: lease.ReasonTaskEnded})
	if err != nil {
		return BranchLeaseResult{}, leaseErr(err)
	}
	return BranchLeaseResult{}, nil
}

// leaseErr makes a refusal non-retryable; anything else is retried.
func leaseErr(err error) error {
	var ref *lease.RefusedError
	if errors.As(err, &ref) {
		return temporal.NewNonRetryableApplicationError(ref.Message, ref.Type, nil)
	}
	return fmt.Errorf("branch lease: %w", err)
}
