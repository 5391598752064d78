package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// startRecovery takes ampflow's word that role's run died and is
// delivered again (a starting worker that found it, or the delivery's
// retried attempt): the task reports recovering until the retried run
// starts. A run the task no longer waits for, or a suspended task, has
// nothing to recover.
func (t *taskRun) startRecovery(ctx workflow.Context, r task.Recovery) {
	if t.suspended() || !t.waitsFor(r.Role) {
		return
	}
	if c := t.Recovering; c != nil && c.Role == r.Role && c.MsgID == r.MsgID {
		return // the same death, told twice: the first time it was learned stands
	}
	r.Since, r.Note = workflow.Now(ctx), boundNote(r.Note)
	t.Recovering = &r
	// The note of whoever found the death says when and how; without
	// one, what the task knows.
	note := r.Note
	if note == "" {
		note = fmt.Sprintf("the %s's run on %s died and is delivered again", r.Role, r.MsgID)
		if r.Session != "" {
			note += ", resuming session " + r.Session
		}
	}
	t.addTimeline(ctx, task.TimelineEntry{Kind: "status", Status: task.StatusRecovering, MsgID: r.MsgID, To: string(r.Role), Note: note})
	t.snapshot()
}

// endRecovery ends the recovery of role's run, if one is under way, with
// note on the timeline: the retried run has started, or what replaced it.
func (t *taskRun) endRecovery(ctx workflow.Context, role amp.Role, note string) {
	r := t.Recovering
	if r == nil || r.Role != role {
		return
	}
	t.Recovering = nil
	t.addTimeline(ctx, task.TimelineEntry{Kind: "status", Status: t.Status, MsgID: r.MsgID, To: string(role), Note: note})
	t.snapshot()
}
