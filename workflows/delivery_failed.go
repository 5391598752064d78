package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// failedToRaise returns the failed delivery of msgID the admins have not
// yet been asked about, or nil.
func (t *taskRun) failedToRaise(msgID string) *deliveryFailed {
	if f := t.Failed; f != nil && f.MsgID == msgID && !f.Raised {
		return f
	}
	return nil
}

// raiseFailed escalates a failed delivery and asks the admins to send it
// again, keep waiting (the agent may still answer through the API) or
// terminate; the agent's stderr goes with the question.
func (t *taskRun) raiseFailed(ctx workflow.Context, f *deliveryFailed, again decision.Option) error {
	f.Raised = true
	t.Deadline = time.Time{}
	desc := fmt.Sprintf("The delivery of %s to the %s failed: %s.", f.MsgID, f.To, f.Summary)
	esc := t.escalate(ctx, amp.EscUnknown, amp.SeverityWarning, amp.RoleSystem, desc, []string{f.MsgID},
		"Send it again", "Keep waiting for the "+string(f.To), "Terminate the task")
	t.withdrawDecision(ctx, "superseded by a failed delivery")
	t.LastError = f.line()
	return t.ask(ctx, task.KindDeliveryFailed, desc+" Send it again, keep waiting or terminate?", esc, again, optWait, optTerminate)
}

// clearFailed forgets a failed delivery once the task moves on, with the
// Last error it set.
func (t *taskRun) clearFailed() {
	if t.Failed == nil {
		return
	}
	if t.LastError == t.Failed.line() {
		t.LastError = ""
	}
	t.Failed = nil
}
