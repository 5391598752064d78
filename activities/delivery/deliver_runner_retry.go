package delivery

import (
	"context"
	"fmt"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// noteRetry tells the task that attempt (2 or more) of a runner delivery
// is starting: the last attempt ended without an answer (its worker died,
// or it was silent past the activity's heartbeat timeout). The task
// reports recovering until this attempt's run sends its first heartbeat.
func (d *Delivery) noteRetry(ctx context.Context, a activities.AgentDelivery, m amp.Message, attempt int32) {
	if d.Heartbeats == nil || attempt < 2 {
		return
	}
	session := d.loadSession(a, m)
	note := fmt.Sprintf("attempt %d of the %s's run on %s: the last attempt ended without an answer (its worker died, or it was silent past the heartbeat timeout); ",
		attempt, m.To, m.MsgID)
	if session != "" {
		note += "resuming session " + session
	} else {
		note += "running it again"
	}
	in := task.HeartbeatInput{Note: note, Recovering: &task.Recovery{Role: m.To, MsgID: m.MsgID, Session: session, Note: note}}
	if err := d.Heartbeats.Heartbeat(ctx, m.TaskID, in); err != nil {
		d.log().Warn("telling a task its run is tried again", "task_id", m.TaskID, "msg_id", m.MsgID, "error", err)
	}
}
