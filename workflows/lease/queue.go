package lease

import (
	"fmt"
	"github.com/ampflow/ampflow/amp/lease"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

func (l *leaseWF) validateWait(req lease.WaitRequest) error {
	if err := l.validateAcquire(lease.AcquireRequest{AgentID: req.AgentID, TTLSeconds: req.TTLSeconds}); err != nil {
		return err
	}
	if req.WorkflowID == "" || req.Signal == "" {
		return temporal.NewNonRetryableApplicationError("workflow_id and signal: are required", lease.ErrInvalid, nil)
	}
	if l.position(req.AgentID) < 0 && len(l.queue) >= lease.MaxQueue {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s: %d waiters already", l.key, lease.MaxQueue), lease.ErrInvalid, nil)
	}
	return nil
}

// wait takes the key when it is free or the waiter's already, and
// otherwise queues the waiter (once: asking again keeps its place).
func (l *leaseWF) wait(ctx workflow.Context, req lease.WaitRequest) (lease.AcquireResult, error) {
	if l.cur == nil || l.cur.AgentID == req.AgentID {
		out, adopted, err := l.take(ctx, req.AgentID, req.TTLSeconds)
		if err != nil {
			return lease.AcquireResult{}, err
		}
		if adopted {
			return l.wait(ctx, req)
		}
		return lease.AcquireResult{Lease: &out}, nil
	}
	i := l.position(req.AgentID)
	if i < 0 {
		l.queue = append(l.queue, req)
		i = len(l.queue) - 1
	}
	return lease.AcquireResult{Queued: i + 1, Conflict: &lease.Conflict{
		Holder: l.cur.AgentID, LeaseID: l.cur.LeaseID,
		RetryAfterMS: max(0, l.cur.ExpiresAt.Sub(workflow.Now(ctx)).Milliseconds()),
	}}, nil
}

func (l *leaseWF) validateLeave(req lease.LeaveRequest) error {
	if err := lease.CheckAgent(req.AgentID); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), lease.ErrInvalid, nil)
	}
	return l.validateReason(req.Reason)
}

// leave takes the agent out of the queue and ends its lease, whichever it
// has; having neither is no error, so a retried leave answers the same.
func (l *leaseWF) leave(ctx workflow.Context, req lease.LeaveRequest) (lease.LeaveResult, error) {
	var out lease.LeaveResult
	if err := l.verifyLeave(ctx, req); err != nil {
		return out, err
	}
	if i := l.position(req.AgentID); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
		out.Left = true
	}
	if l.cur == nil || l.cur.AgentID != req.AgentID {
		return out, nil
	}
	reason, event := req.Reason, lease.EventReleased
	switch reason {
	case "":
		reason = lease.ReasonReleased
	case lease.ReasonReleased, lease.ReasonAdmin, lease.ReasonTaskEnded:
	default:
		event = lease.EventAutoReleased
	}
	if err := l.end(ctx, reason, lease.StateReleased, event); err != nil {
		return out, err
	}
	released := *l.last
	out.Released = &released
	return out, l.handOff(ctx)
}

func (l *leaseWF) position(agent string) int {
	return slices.IndexFunc(l.queue, func(w lease.Waiter) bool { return w.AgentID == agent })
}

// handOff gives a free key to the first waiter and signals its workflow.
// A waiter whose workflow cannot be signalled (it ended) has its lease
// ended at once, and the key goes on to the next.
func (l *leaseWF) handOff(ctx workflow.Context) error {
	for l.cur == nil && len(l.queue) > 0 {
		w := l.queue[0]
		l.queue = l.queue[1:]
		granted, adopted, err := l.take(ctx, w.AgentID, w.TTLSeconds)
		if err != nil {
			return err
		}
		if adopted {
			// Taken directly in the store meanwhile: w waits on.
			l.queue = append([]lease.Waiter{w}, l.queue...)
			return nil
		}
		err = workflow.SignalExternalWorkflow(ctx, w.WorkflowID, "", w.Signal, lease.Grant{Lease: granted}).Get(ctx, nil)
		if err == nil {
			continue
		}
		workflow.GetLogger(ctx).Warn("a waiter of the key is gone", "resource_key", l.key, "waiter", w.WorkflowID, "error", err)
		if err := l.end(ctx, lease.ReasonTaskEnded, lease.StateReleased, lease.EventAutoReleased); err != nil {
			return err
		}
	}
	return nil
}
