package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
)

func deliveryOff(what string) error {
	return temporal.NewNonRetryableApplicationError(what+": "+errNotConfigured.Error(), ErrDeliveryConfig, nil)
}

// PushTarget reads where a task's branch will be pushed.
func (a *Activities) PushTarget(ctx context.Context, in PushTargetInput) (PushTargetResult, error) {
	if a.Pusher == nil {
		return PushTargetResult{}, deliveryOff("delivery.push")
	}
	return a.Pusher.Target(ctx, in)
}

// PushBranch pushes a task's branch to its remote.
func (a *Activities) PushBranch(ctx context.Context, in PushInput) (PushResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pusher == nil {
		return PushResult{}, deliveryOff("delivery.push")
	}
	return a.Pusher.Push(ctx, in)
}

// SyncPullRequest opens or updates a task's pull request.
func (a *Activities) SyncPullRequest(ctx context.Context, in PullRequestInput) (PullRequestResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pulls == nil {
		return PullRequestResult{}, deliveryOff("delivery.pull_request")
	}
	return a.Pulls.Sync(ctx, in)
}

// PullReviews reads the GitHub reviews of a task's pull request.
func (a *Activities) PullReviews(ctx context.Context, in ReviewsInput) (ReviewsResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pulls == nil {
		return ReviewsResult{}, deliveryOff("delivery.pull_request")
	}
	return a.Pulls.Reviews(ctx, in)
}

// MergePullRequest merges a task's pull request.
func (a *Activities) MergePullRequest(ctx context.Context, in MergeInput) (MergeResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pulls == nil {
		return MergeResult{}, deliveryOff("delivery.merge")
	}
	return a.Pulls.Merge(ctx, in)
}

// QueueRebaseRemote rebases a task's pushed branch onto its target's
// head on the remote, for the merge queue.
func (a *Activities) QueueRebaseRemote(ctx context.Context, in QueueRebaseRemoteInput) (QueueRebaseResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pusher == nil {
		return QueueRebaseResult{}, deliveryOff("delivery.push")
	}
	return a.Pusher.QueueRebaseRemote(ctx, in)
}

// QueueMoveRemote moves a remote target to a task's rebase, for the
// merge queue of a repository given by URL.
func (a *Activities) QueueMoveRemote(ctx context.Context, in QueueMoveRemoteInput) (QueueMergeResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pusher == nil {
		return QueueMergeResult{}, deliveryOff("delivery.push")
	}
	return a.Pusher.QueueMoveRemote(ctx, in)
}

// QueueTarget reads the rules of a pull request's target, for the merge
// queue.
func (a *Activities) QueueTarget(ctx context.Context, in QueueTargetInput) (QueueTargetResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pulls == nil {
		return QueueTargetResult{}, deliveryOff("delivery.pull_request")
	}
	return a.Pulls.QueueTarget(ctx, in)
}

// QueueMergePull merges a task's pull request under the merge queue.
func (a *Activities) QueueMergePull(ctx context.Context, in QueueMergePullInput) (QueueMergePullResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pulls == nil {
		return QueueMergePullResult{}, deliveryOff("delivery.pull_request")
	}
	return a.Pulls.QueueMerge(ctx, in)
}

// QueueEnqueue adds a task's pull request to GitHub's own merge queue.
func (a *Activities) QueueEnqueue(ctx context.Context, in QueueEnqueueInput) (QueueEntryResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pulls == nil {
		return QueueEntryResult{}, deliveryOff("delivery.pull_request")
	}
	return a.Pulls.Enqueue(ctx, in)
}

// QueueEntry reads where a task's pull request stands in GitHub's own
// merge queue.
func (a *Activities) QueueEntry(ctx context.Context, in QueueEnqueueInput) (QueueEntryResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	if a.Pulls == nil {
		return QueueEntryResult{}, deliveryOff("delivery.pull_request")
	}
	return a.Pulls.QueueEntry(ctx, in)
}

// shortBeat is how often the activities that reach GitHub, and the merge
// queue's, heartbeat: an
// attempt whose worker died is retried after the heartbeat timeout
// (workflows.ShortHeartbeatTimeout), not after the whole attempt's.
const shortBeat = 2 * time.Second
