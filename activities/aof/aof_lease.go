package aof

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
)

// AOFLeaser takes and gives up a resource's lease; the wiring adapts the
// lease room's client to it.
type AOFLeaser interface {
	// AcquireLease takes key for agent for ttl, or renews it when agent
	// holds it; when another agent holds it, holder names that agent and
	// leaseID is empty.
	AcquireLease(ctx context.Context, key, agent string, ttl time.Duration) (leaseID, holder string, err error)
	RenewLease(ctx context.Context, leaseID, agent string, ttl time.Duration) error
	// ReleaseLease gives the lease up; a lease no longer held (expired,
	// released already) is no error.
	ReleaseLease(ctx context.Context, leaseID, agent string) error
}

// AOFLeases holds the AOF task workflow's lease steps: a dispatched run
// holds the task's lease, renewed by its heartbeats and released when
// the task leaves in_progress.
type AOFLeases struct {
	Leases AOFLeaser
}

// AOFLeaseInput names a lease step: Key and TTL to acquire, LeaseID to
// renew or release, and the run's agent.
type AOFLeaseInput struct {
	Key     string        `json:"key,omitempty"`
	LeaseID string        `json:"leaseId,omitempty"`
	AgentID string        `json:"agentId"`
	TTL     time.Duration `json:"ttl,omitempty"`
}

// AOFLeaseResult is the lease taken, or the agent that holds it.
type AOFLeaseResult struct {
	LeaseID string `json:"leaseId,omitempty"`
	Holder  string `json:"holder,omitempty"`
}

// ErrAOFNoLeases refuses a lease step of a worker without the lease
// system.
const ErrAOFNoLeases = "AOFNoLeases"

func (a *AOFLeases) leaser() (AOFLeaser, error) {
	if a == nil || a.Leases == nil {
		return nil, temporal.NewNonRetryableApplicationError("this worker has no lease system", ErrAOFNoLeases, nil)
	}
	return a.Leases, nil
}

// AcquireAOFLease takes the task's lease for the dispatched agent.
func (a *AOFLeases) AcquireAOFLease(ctx context.Context, in AOFLeaseInput) (AOFLeaseResult, error) {
	l, err := a.leaser()
	if err != nil {
		return AOFLeaseResult{}, err
	}
	id, holder, err := l.AcquireLease(ctx, in.Key, in.AgentID, in.TTL)
	if err != nil {
		return AOFLeaseResult{}, leaseError(fmt.Sprintf("acquiring lease %s for %s", in.Key, in.AgentID), err)
	}
	return AOFLeaseResult{LeaseID: id, Holder: holder}, nil
}

// RenewAOFLease renews the run's lease on a heartbeat.
func (a *AOFLeases) RenewAOFLease(ctx context.Context, in AOFLeaseInput) (AOFLeaseResult, error) {
	l, err := a.leaser()
	if err != nil {
		return AOFLeaseResult{}, err
	}
	if err := l.RenewLease(ctx, in.LeaseID, in.AgentID, in.TTL); err != nil {
		return AOFLeaseResult{}, leaseError(fmt.Sprintf("renewing lease %s of %s", in.LeaseID, in.AgentID), err)
	}
	return AOFLeaseResult{LeaseID: in.LeaseID}, nil
}

// ReleaseAOFLease gives the run's lease up.
func (a *AOFLeases) ReleaseAOFLease(ctx context.Context, in AOFLeaseInput) (AOFLeaseResult, error) {
	l, err := a.leaser()
	if err != nil {
		return AOFLeaseResult{}, err
	}
	if err := l.ReleaseLease(ctx, in.LeaseID, in.AgentID); err != nil {
		return AOFLeaseResult{}, leaseError(fmt.Sprintf("releasing lease %s of %s", in.LeaseID, in.AgentID), err)
	}
	return AOFLeaseResult{}, nil
}

// ErrAOFLeaseRefused marks a lease step the lease system refused (not
// held, another's, out of bounds): retrying does not help.
const ErrAOFLeaseRefused = "AOFLeaseRefused"

// LeaseRefused wraps a refusal of the lease system, so the step is not
// retried.
type LeaseRefused struct{ Err error }

func (e *LeaseRefused) Error() string { return e.Err.Error() }
func (e *LeaseRefused) Unwrap() error { return e.Err }

func leaseError(op string, err error) error {
	var r *LeaseRefused
	if errors.As(err, &r) {
		return temporal.NewNonRetryableApplicationError(op+": "+err.Error(), ErrAOFLeaseRefused, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
