package lease

import (
	"context"
	"errors"
	"fmt"
	"github.com/ampflow/ampflow/amp/lease"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp/decision"
)

// Client is the way in to lease workflows for the API and the CLI.
type Client struct {
	Temporal  client.Client
	TaskQueue string
	// Wait bounds each call; zero is 15s.
	Wait time.Duration
	// DecisionKey signs a release as admin (auth.decision_key); without
	// it such a release is refused.
	DecisionKey []byte
}

func (c *Client) wait() time.Duration {
	if c.Wait > 0 {
		return c.Wait
	}
	return 15 * time.Second
}

// acquireAttempts bounds the tries of an acquire that meets a workflow
// ending as it arrives (the key's previous run lingering out).
const acquireAttempts = 3

// Acquire takes key for req.AgentID, starting the key's workflow when
// none runs: update-with-start makes the start and the acquire one step,
// so of two callers racing for a free key exactly one gets it. The other
// gets a lease.Conflict.
func (c *Client) Acquire(ctx context.Context, key string, req lease.AcquireRequest) (lease.AcquireResult, error) {
	out, err := c.withStart(ctx, key, lease.UpdateAcquire, req)
	if err != nil {
		return lease.AcquireResult{}, fmt.Errorf("acquiring %s for %s: %w", key, req.AgentID, err)
	}
	return out, nil
}

// AcquireOrQueue takes key for req.AgentID as Acquire does, or queues it: the key's
// workflow signals req.WorkflowID with req.Signal and a lease.Grant when the key
// passes to it.
func (c *Client) AcquireOrQueue(ctx context.Context, key string, req lease.WaitRequest) (lease.AcquireResult, error) {
	out, err := c.withStart(ctx, key, lease.UpdateWait, req)
	if err != nil {
		return lease.AcquireResult{}, fmt.Errorf("waiting for %s for %s: %w", key, req.AgentID, err)
	}
	return out, nil
}

// Leave gives up req.AgentID's place in key's queue and its lease on key,
// signed with the decision key.
// No workflow for the key means nothing to give up.
func (c *Client) Leave(ctx context.Context, key string, req lease.LeaveRequest) (lease.LeaveResult, error) {
	var out lease.LeaveResult
	if len(c.DecisionKey) == 0 {
		return out, fmt.Errorf("leaving %s for %s: this process has no decision key (auth.decision_key)", key, req.AgentID)
	}
	req.At = time.Now().UTC()
	a, err := req.SignedAs()
	if err != nil {
		return out, fmt.Errorf("signing the leave of %s for %s: %w", key, req.AgentID, err)
	}
	req.Signature = decision.SignAnswer(c.DecisionKey, lease.WorkflowID(key), a)
	err = c.updateKey(ctx, key, lease.UpdateLeave, req, &out)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return lease.LeaveResult{}, nil
	}
	if err != nil {
		if refused := refusedOf(err); refused != nil {
			return out, refused
		}
		return out, fmt.Errorf("leaving %s for %s: %w", key, req.AgentID, err)
	}
	return out, nil
}

func (c *Client) withStart(ctx context.Context, key, name string, req any) (lease.AcquireResult, error) {
	if err := lease.CheckKey(key); err != nil {
		return lease.AcquireResult{}, &lease.RefusedError{Type: lease.ErrInvalid, Message: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	var err error
	for range acquireAttempts {
		var out lease.AcquireResult
		start := c.Temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID:                       lease.WorkflowID(key),
			TaskQueue:                c.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		}, lease.WorkflowType, lease.Input{ResourceKey: key})
		var h client.WorkflowUpdateHandle
		h, err = c.Temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateName:   name,
				Args:         []any{req},
				WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		if err == nil {
			err = h.Get(ctx, &out)
		}
		if err == nil {
			return out, nil
		}
		if refused := refusedOf(err); refused != nil {
			return lease.AcquireResult{}, refused
		}
		if ctx.Err() != nil {
			break
		}
	}
	return lease.AcquireResult{}, err
}

// Renew is the holder's heartbeat.
func (c *Client) Renew(ctx context.Context, req lease.RenewRequest) (lease.Lease, error) {
	var out lease.Lease
	return out, c.update(ctx, req.LeaseID, lease.UpdateRenew, req, &out)
}

// Release ends a lease, signed with the decision key.
func (c *Client) Release(ctx context.Context, req lease.ReleaseRequest) (lease.Lease, error) {
	var out lease.Lease
	key, err := lease.KeyOf(req.LeaseID)
	if err != nil {
		return out, &lease.RefusedError{Type: lease.ErrNotHeld, Message: err.Error()}
	}
	if len(c.DecisionKey) == 0 {
		return out, fmt.Errorf("releasing lease %s: this process has no decision key (auth.decision_key)", req.LeaseID)
	}
	req.At = time.Now().UTC()
	a, err := req.SignedAs()
	if err != nil {
		return out, fmt.Errorf("signing the release of lease %s: %w", req.LeaseID, err)
	}
	req.Signature = decision.SignAnswer(c.DecisionKey, lease.WorkflowID(key), a)
	return out, c.update(ctx, req.LeaseID, lease.UpdateRelease, req, &out)
}

func (c *Client) update(ctx context.Context, leaseID, name string, arg, out any) error {
	key, err := lease.KeyOf(leaseID)
	if err != nil {
		return &lease.RefusedError{Type: lease.ErrNotHeld, Message: err.Error()}
	}
	err = c.updateKey(ctx, key, name, arg, out)
	if err == nil {
		return nil
	}
	if refused := refusedOf(err); refused != nil {
		return refused
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return &lease.RefusedError{Type: lease.ErrNotHeld, Message: fmt.Sprintf("lease %s is not held", leaseID)}
	}
	return fmt.Errorf("%s of lease %s: %w", name, leaseID, err)
}

func (c *Client) updateKey(ctx context.Context, key, name string, arg, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	h, err := c.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   lease.WorkflowID(key),
		UpdateName:   name,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, out)
	}
	return err
}

func refusedOf(err error) *lease.RefusedError {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		switch app.Type() {
		case lease.ErrNotHeld, lease.ErrNotHolder, lease.ErrInvalid:
			return &lease.RefusedError{Type: app.Type(), Message: app.Message()}
		}
	}
	return nil
}
