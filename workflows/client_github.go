package workflows

import (
	"context"

	"github.com/ampflow/ampflow/amp/task"
)

// WakeForGitHubReview tells a task a review of its pull request came in:
// it reads the reviews now rather than at its next poll.
func (c *Client) WakeForGitHubReview(ctx context.Context, taskID, delivery string) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	err := c.Temporal.SignalWorkflow(ctx, task.WorkflowID(taskID), "", task.SignalGitHubReview, task.GitHubReviewSignal{Delivery: delivery})
	return c.wrapEnded(ctx, taskID, err, "waking "+taskID+" for a GitHub review")
}
