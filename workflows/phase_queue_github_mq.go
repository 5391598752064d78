package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp/task"
)

// githubMergeQueue hands the pull request to GitHub's own merge queue,
// its target having a merge_queue rule: GitHub merges it with what is
// queued before it, runs the checks on that merge group, and merges it.
// The task, holding the target's lease meanwhile, reads its entry every
// ci.poll_interval up to ci.timeout. A pull request taken out of
// GitHub's queue unmerged (a conflict, failing checks) is a round for
// the executor.
func (t *taskRun) githubMergeQueue(ctx workflow.Context) (phase, error) {
	q, gs := t.queue(), t.gh()
	in := activities.QueueEnqueueInput{TaskID: t.In.TaskID, GitHubRepo: t.GitHubRepo, Number: gs.Number, NodeID: gs.NodeID, Head: gs.Pushed}
	var e activities.QueueEntryResult
	if !q.GitHubQueue {
		if gaveWay, err := t.queueRemoteActivity(ctx, acts.QueueEnqueue, in, &e); gaveWay || err != nil {
			if err != nil {
				return t.queueProblem(ctx, fmt.Sprintf("Adding %s to GitHub's merge queue of %s failed: %s.", gs.URL, q.Target, errMessage(err)))
			}
			return phaseQueue, nil
		}
		q.GitHubQueue = true
		t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: fmt.Sprintf("added %s to GitHub's merge queue of %s", gs.URL, q.Target)})
	} else if gaveWay, err := t.queueRemoteActivity(ctx, acts.QueueEntry, in, &e); gaveWay || err != nil {
		if err != nil {
			return t.queueProblem(ctx, fmt.Sprintf("Reading %s in GitHub's merge queue failed: %s.", gs.URL, errMessage(err)))
		}
		return phaseQueue, nil
	}
	t.setStatus(ctx, task.StatusCICheck, "in GitHub's merge queue of "+q.Target)
	if t.CIDeadline.IsZero() {
		t.CIDeadline = workflow.Now(ctx).Add(t.In.Policy.CITimeout)
	}
	for {
		switch {
		case e.Merged:
			t.CIDeadline, q.GitHubQueue = time.Time{}, false
			return t.queueRemoteMerged(ctx, e.SHA, gs.URL, map[string]any{"event": "merge", "queue": true, "github_merge_queue": true,
				"target": q.Target, "head": gs.Pushed, "pull_request": gs.Number, "url": gs.URL})
		case !e.Queued:
			t.CIDeadline, q.GitHubQueue = time.Time{}, false
			return t.queueRound(ctx, "was taken out of GitHub's merge queue of "+q.Target, fmt.Sprintf(
				"GitHub's merge queue of %s took your pull request %s out without merging it: the branch %s conflicts with what was queued before it, "+
					"or the checks fail on it merged with that (merge queue, round %d of %d). Rebase %s onto %s's head (git fetch origin, then git rebase origin/%s), "+
					"make the checks pass there, and report the new commit. This is not a rejection.",
				q.Target, gs.URL, t.In.Plan.Branch, q.Rounds+1, t.In.Policy.MaxCIRounds, t.In.Plan.Branch, q.Target, q.Target))
		case !workflow.Now(ctx).Before(t.CIDeadline):
			t.CIDeadline = time.Time{}
			return t.queueProblem(ctx, fmt.Sprintf("%s was still in GitHub's merge queue of %s after %s.", gs.URL, q.Target, task.FormatDuration(t.In.Policy.CITimeout)))
		}
		wake := workflow.Now(ctx).Add(t.In.Policy.CIPollInterval)
		if wake.After(t.CIDeadline) {
			wake = t.CIDeadline
		}
		if _, err := t.waitFor(ctx, wake, func() bool { return false }); err != nil {
			return phaseQueue, err
		}
		if t.mustGiveWay(ctx) {
			return phaseQueue, nil
		}
		if held, err := t.keepQueueLease(ctx); err != nil || !held {
			return phaseQueue, err
		}
		e = activities.QueueEntryResult{} // a result decoded over the last would keep its fields
		if gaveWay, err := t.queueRemoteActivity(ctx, acts.QueueEntry, in, &e); gaveWay || err != nil {
			if err != nil {
				return t.queueProblem(ctx, fmt.Sprintf("Reading %s in GitHub's merge queue failed: %s.", gs.URL, errMessage(err)))
			}
			return phaseQueue, nil
		}
	}
}
