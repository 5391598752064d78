package workflows

import (
	"context"

	"github.com/ampflow/ampflow/amp/task"
)

// ToolCall records an agent CLI's tool call in its task, which raises a
// tool_call decision when the policy asks; it answers the call as the
// task took it (allow, deny, or pending with its id).
func (c *Client) ToolCall(ctx context.Context, taskID string, in task.ToolCall) (task.ToolCall, error) {
	var out task.ToolCall
	err := c.update(ctx, taskID, task.UpdateToolCall, "", in, &out)
	return out, err
}
