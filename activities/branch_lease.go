package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// BranchLeases takes, renews and gives up tasks' branch leases. The lease
// system provides it (activities/lease.Branches over the lease workflows);
// a worker without the lease system leaves it nil and a task asking for a
// branch lease is refused with ErrNoLeases.
type BranchLeases interface {
	Acquire(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error)
	Renew(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error)
	Release(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error)
}

// ErrNoLeases refuses a branch lease on a worker without a lease client.
const ErrNoLeases = "NoLeases"

// BranchLeaseInput names a task's branch lease. TTL is the lease's time to
// live; LeaseID, for a renewal or a release, the lease held, with, for a
// lease held directly in the store (task.BranchLease.Direct), the version
// the task last wrote and the lease's times.
type BranchLeaseInput struct {
	TaskID     string        `json:"task_id"`
	Repo       string        `json:"repo"`
	Branch     string        `json:"branch"`
	TTL        time.Duration `json:"ttl,omitempty"`
	LeaseID    string        `json:"lease_id,omitempty"`
	Version    int64         `json:"version,omitempty"`
	Direct     bool          `json:"direct,omitempty"`
	AcquiredAt time.Time     `json:"acquired_at,omitzero"`
	ExpiresAt  time.Time     `json:"expires_at,omitzero"`
	// ReleasedAt is when a release happened, by the workflow's clock
	// (RecordInput.Release); zero means now.
	ReleasedAt time.Time `json:"released_at,omitzero"`
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

// maxBranchKeyLen is the lease system's bound on a resource key
// (lease.MaxKeyLen; activities/lease checks that the two agree).
const maxBranchKeyLen = 200

// BranchKey is the resource key of a branch: task.BranchLeaseKey, with the
// repository path digested when the key would pass the lease system's
// bound on a key.
func BranchKey(repo, branch string) string {
	key := task.BranchLeaseKey(repo, branch)
	if len(key) <= maxBranchKeyLen {
		return key
	}
	sum := sha256.Sum256([]byte(repo))
	return task.BranchLeaseKey("sha256-"+hex.EncodeToString(sum[:12]), branch)
}

// AcquireBranchLease takes the task's branch lease, or queues the task for
// it: the lease workflow signals the task (task.SignalLeaseGranted) when
// the branch passes to it. Asking again keeps the task's place.
func (a *Activities) AcquireBranchLease(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error) {
	if a.Leases == nil {
		return BranchLeaseResult{}, errNoLeases()
	}
	return a.Leases.Acquire(ctx, in)
}

// RenewBranchLease renews the task's branch lease; a lease that is no
// longer the task's comes back as Lost, with why.
func (a *Activities) RenewBranchLease(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error) {
	if a.Leases == nil {
		return BranchLeaseResult{}, errNoLeases()
	}
	return a.Leases.Renew(ctx, in)
}

// ReleaseBranchLease gives the task's branch lease up, or its place in the
// queue, as the task ends; the next task waiting gets the branch.
func (a *Activities) ReleaseBranchLease(ctx context.Context, in BranchLeaseInput) (BranchLeaseResult, error) {
	if a.Leases == nil {
		return BranchLeaseResult{}, errNoLeases()
	}
	return a.Leases.Release(ctx, in)
}

// LeaseChanges makes a task's release of its direct branch lease the
// store's compare-and-set, for Record to write in a batch's transaction
// (lease.Branches).
type LeaseChanges interface {
	ReleaseChange(in BranchLeaseInput) (ssot.LeaseChange, error)
}

func errNoLeases() error {
	return temporal.NewNonRetryableApplicationError("this worker has no lease client", ErrNoLeases, nil)
}
