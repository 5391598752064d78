package lease

import (
	"github.com/ampflow/ampflow/amp/lease"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/workflows/decide"
)

// verifyLeave refuses a leave that would give up a place in the queue or
// the lease, unless a channel holding the decision key signed it (the
// task's release through Client.Leave): a raw Temporal update cannot free
// a key or drop a waiter. The check is decide.VerifySigned's, in a local
// activity that records a refusal; a leave that gives up nothing is not
// checked.
func (l *leaseWF) verifyLeave(ctx workflow.Context, req lease.LeaveRequest) error {
	if l.position(req.AgentID) < 0 && (l.cur == nil || l.cur.AgentID != req.AgentID) {
		return nil
	}
	a, err := req.SignedAs()
	if err == nil {
		err = decide.VerifySigned(ctx, lease.WorkflowID(l.key), a)
	}
	if err != nil {
		return temporal.NewNonRetryableApplicationError("leave refused: "+err.Error(), lease.ErrNotHolder, nil)
	}
	return nil
}
