package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/github"
)

// QueueEnqueueInput names a task's pull request for GitHub's own merge
// queue.
type QueueEnqueueInput struct {
	TaskID     string `json:"task_id"`
	GitHubRepo string `json:"github_repo"`
	Number     int    `json:"number"`
	NodeID     string `json:"node_id"`
	// Head is the head the pull request must still have.
	Head string `json:"head"`
}

// QueueEntryResult is where a pull request stands in GitHub's merge
// queue: queued (with its entry's state), merged, or neither.
type QueueEntryResult struct {
	Queued bool   `json:"queued,omitempty"`
	State  string `json:"state,omitempty"`
	Merged bool   `json:"merged,omitempty"`
	SHA    string `json:"sha,omitempty"`
}

func entryOf(e github.MergeQueueEntry) QueueEntryResult {
	return QueueEntryResult{Queued: e.Queued, State: e.State, Merged: e.Merged, SHA: e.MergeCommit}
}

// Enqueue adds the pull request to its target's merge queue on GitHub
// (enqueuePullRequest, with in.Head as the expected head). A pull
// request queued or merged already (a retry) is answered as it stands,
// not queued again.
func (p *PullRequests) Enqueue(ctx context.Context, in QueueEnqueueInput) (QueueEntryResult, error) {
	repo, err := p.repo(in.TaskID, in.GitHubRepo)
	if err != nil {
		return QueueEntryResult{}, err
	}
	e, err := p.API.QueueEntry(ctx, in.NodeID)
	if err != nil {
		return QueueEntryResult{}, p.apiError(repo, err)
	}
	if e.Queued || e.Merged {
		return entryOf(e), nil
	}
	if e, err = p.API.Enqueue(ctx, in.NodeID, in.Head); err != nil {
		if errors.Is(err, github.ErrRefused) {
			return QueueEntryResult{}, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("adding %s#%d of task %s to GitHub's merge queue: %v", repo, in.Number, in.TaskID, err), ErrQueueMerge, err)
		}
		return QueueEntryResult{}, p.apiError(repo, err)
	}
	return entryOf(e), nil
}

// QueueEntry reads where the pull request stands in GitHub's merge
// queue.
func (p *PullRequests) QueueEntry(ctx context.Context, in QueueEnqueueInput) (QueueEntryResult, error) {
	repo, err := p.repo(in.TaskID, in.GitHubRepo)
	if err != nil {
		return QueueEntryResult{}, err
	}
	e, err := p.API.QueueEntry(ctx, in.NodeID)
	if err != nil {
		return QueueEntryResult{}, p.apiError(repo, err)
	}
	return entryOf(e), nil
}
