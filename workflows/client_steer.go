package workflows

import (
	"context"

	"github.com/ampflow/ampflow/amp/task"
)

// Steer tells a task that a message for its agent is in the store
// (SignalSteer): it enters the timeline and resumes an interrupted run.
func (c *Client) Steer(ctx context.Context, taskID string, in task.SteerInput) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	err := c.Temporal.SignalWorkflow(ctx, task.WorkflowID(taskID), "", task.SignalSteer, in)
	return c.wrapEnded(ctx, taskID, err, "telling "+taskID+" of a message")
}
