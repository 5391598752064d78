package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// onSteer takes the messages people send the task's agent: each is in
// the timeline, and the newest one resumes an interrupted run.
func (t *taskRun) onSteer(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(workflow.GetSignalChannel(ctx, task.SignalSteer), func(c workflow.ReceiveChannel, _ bool) {
		var in task.SteerInput
		c.Receive(ctx, &in)
		if in.ID <= 0 || t.Status.Terminal() {
			return
		}
		t.Steered = max(t.Steered, in.ID)
		t.addTimeline(ctx, task.TimelineEntry{Kind: "say", From: in.By,
			Note: fmt.Sprintf("message %d from %s for the running agent", in.ID, in.By)})
		t.snapshot()
	})
}

// awaitSteer waits, without any process, for a message sent after the
// interrupt that stopped a runner's run (app, an
// activities.ErrInterrupted), or for the delivery to be called off (a
// redispatch, the task's end), and returns how to run it again: its
// session resumed with the messages as its prompt.
func (t *taskRun) awaitSteer(ctx, dctx workflow.Context, m amp.Message, app *temporal.ApplicationError) (*activities.Resume, error) {
	var p activities.Interrupted
	_ = app.Details(&p)
	t.Interrupted = &task.Interruption{Role: string(m.To), By: p.By, At: workflow.Now(ctx)}
	t.addTimeline(ctx, task.TimelineEntry{Kind: "interrupted", MsgID: m.MsgID, To: string(m.To), From: p.By,
		Note: fmt.Sprintf("interrupted by %s: the %s's run stopped, its session and worktree kept; a message (ampflow task say) or a redispatch resumes it",
			p.By, m.To)})
	t.snapshot()
	err := workflow.Await(ctx, func() bool { return dctx.Err() != nil || t.Steered > p.ID })
	t.Interrupted = nil
	t.LastActive = workflow.Now(ctx)
	if err == nil {
		err = dctx.Err()
	}
	if err != nil {
		return nil, err
	}
	t.addTimeline(ctx, task.TimelineEntry{Kind: "interrupted", MsgID: m.MsgID, To: string(m.To),
		Note: fmt.Sprintf("the %s's run resumes its session with the messages sent since", m.To)})
	return &activities.Resume{Interrupted: true, SessionID: p.SessionID, By: p.By}, nil
}
