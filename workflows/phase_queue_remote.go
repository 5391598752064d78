package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// queueOnGitHub reports whether the task's merge queue merges its pull
// request on GitHub, rather than moving a target: so for every task that
// has a pull request.
func (t *taskRun) queueOnGitHub() bool {
	return t.In.Policy.Delivery.PullRequests() && t.GitHubRepo != ""
}

// queueOnRemote reports whether the task's merge queue works on its
// remote rather than in a local repository: with a pull request, or for
// a repository given by URL, whose branches live on the remote.
func (t *taskRun) queueOnRemote() bool {
	return t.queueOnGitHub() || amp.RepoIsURL(t.In.Plan.Repo)
}

// queueRemoteActivity runs an activity of the queue on a remote: as the
// delivery's, with the queue's refusals final, and the git work (a
// fetch and rebase, a push) given as long as a first push.
func (t *taskRun) queueRemoteActivity(ctx workflow.Context, fn, in, out any) (gaveWay bool, err error) {
	opts := githubOptions()
	opts.RetryPolicy.NonRetryableErrorTypes = append(opts.RetryPolicy.NonRetryableErrorTypes, activities.ErrQueueMerge)
	switch in.(type) {
	case activities.QueueRebaseRemoteInput, activities.PushInput, activities.QueueMoveRemoteInput:
		opts.StartToCloseTimeout = 10 * time.Minute
	}
	return t.runUntilGiveWay(ctx, func(ctx workflow.Context) workflow.Future {
		return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), fn, in)
	}, out)
}

// mergeQueueRemote is the queue of a task on a remote, holding the
// target's lease: the pushed branch is rebased onto the target's head
// there and pushed again with a lease on its old head, CI (GitHub's, for
// a pull request) runs on the pushed head, and the pull request is
// merged through the API with that head as the expected one, or, with
// no pull request, the target is pushed to it with a lease on its head
// at the rebase. A target that moved meanwhile is rebased onto again; a
// conflict or failing CI is a round.
func (t *taskRun) mergeQueueRemote(ctx workflow.Context) (phase, error) {
	q, gs, branch, pr := t.queue(), t.gh(), t.In.Plan.Branch, t.queueOnGitHub()
	switch {
	case gs.Pushed == "" || gs.Remote == "":
		return t.queueProblem(ctx, fmt.Sprintf("%s was never pushed, so it cannot be merged into %s.", branch, q.Target))
	case pr && gs.Number == 0:
		return t.queueProblem(ctx, fmt.Sprintf("%s has no pull request to merge into %s.", branch, q.Target))
	}
	if q.Rebased == "" && pr {
		var rules activities.QueueTargetResult
		in := activities.QueueTargetInput{TaskID: t.In.TaskID, GitHubRepo: t.GitHubRepo, Target: q.Target}
		if gaveWay, err := t.queueRemoteActivity(ctx, acts.QueueTarget, in, &rules); gaveWay || err != nil {
			if err != nil {
				return t.queueProblem(ctx, fmt.Sprintf("Reading the rules of %s on GitHub failed: %s.", q.Target, errMessage(err)))
			}
			return phaseQueue, nil
		}
		if rules.MergeQueue {
			return t.githubMergeQueue(ctx)
		}
	}
	if q.Rebased == "" {
		var out activities.QueueRebaseResult
		rin := activities.QueueRebaseRemoteInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Remote: gs.Remote, Branch: branch,
			Head: gs.Pushed, Target: q.Target}
		if gaveWay, err := t.queueRemoteActivity(ctx, acts.QueueRebaseRemote, rin, &out); gaveWay || err != nil {
			if err != nil {
				return t.queueProblem(ctx, fmt.Sprintf("Rebasing %s onto %s on the remote failed: %s.", branch, q.Target, errMessage(err)))
			}
			return phaseQueue, nil
		}
		if len(out.Conflicts) > 0 {
			return t.queueConflict(ctx, out)
		}
		q.Base, q.Head, q.Rebased = out.Base, out.Head, out.Rebased
	}
	if gs.Pushed != q.Rebased {
		var out activities.PushResult
		in := activities.PushInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: branch, Remote: gs.Remote,
			Commit: q.Rebased, Lease: gs.Pushed}
		if gaveWay, err := t.queueRemoteActivity(ctx, acts.PushBranch, in, &out); gaveWay || err != nil {
			if err != nil {
				return t.queueProblem(ctx, fmt.Sprintf("Pushing %s rebased onto %s failed: %s.", branch, q.Target, errMessage(err)))
			}
			return phaseQueue, nil
		}
		gs.Pushed, gs.Approvals = out.Commit, nil
		t.record(ctx, fmt.Sprintf("push-%s-%s", t.In.TaskID, shortHash(out.Commit)), ssot.KindEvent,
			map[string]any{"event": "push", "branch": branch, "commit": out.Commit, "replaced": in.Lease, "queue": true, "base": q.Base})
		t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: fmt.Sprintf("pushed %s to %s: rebased onto %s at %s",
			shortHash(out.Commit), branch, q.Target, shortHash(q.Base))})
	}
	if t.In.Policy.CI {
		next, green, err := t.queueCI(ctx)
		if !green || err != nil {
			return next, err
		}
	}
	if held, err := t.keepQueueLease(ctx); err != nil || !held {
		return phaseQueue, err
	}
	what, event := gs.URL, map[string]any{"event": "merge", "queue": true, "target": q.Target, "base": q.Base, "head": q.Rebased}
	if !pr {
		what = branch
	}
	m, gaveWay, err := t.queueRemoteMerge(ctx, pr, event)
	if gaveWay || err != nil {
		if err != nil {
			return t.queueProblem(ctx, fmt.Sprintf("Merging %s into %s failed: %s.", what, q.Target, errMessage(err)))
		}
		return phaseQueue, nil
	}
	if m.Moved {
		return t.targetMoved(ctx, " on the remote", m.Head)
	}
	return t.queueRemoteMerged(ctx, m.SHA, what, event)
}

// queueRemoteMerged records the merge on the remote as sha and ends the
// task's queue.
func (t *taskRun) queueRemoteMerged(ctx workflow.Context, sha, what string, event map[string]any) (phase, error) {
	q, gs := t.queue(), t.gh()
	q.Merged, q.Status, gs.MergeCommit = sha, task.QueueMerged, sha
	t.releaseQueueLease(ctx)
	event["merge_commit"] = sha
	t.record(ctx, fmt.Sprintf("queue-merge-%s", t.In.TaskID), ssot.KindEvent, event)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: fmt.Sprintf("merged %s into %s as %s (queue)", what, q.Target, short7(sha))})
	t.tellGoal(ctx)
	return phaseDone, nil
}

// queueRemoteMerge merges the pushed rebase: the pull request through
// GitHub's API, or, with no pull request, the target pushed to it. The
// merge's particulars go into event.
func (t *taskRun) queueRemoteMerge(ctx workflow.Context, pr bool, event map[string]any) (activities.QueueMergePullResult, bool, error) {
	q, gs := t.queue(), t.gh()
	var m activities.QueueMergePullResult
	if pr {
		in := activities.QueueMergePullInput{TaskID: t.In.TaskID, GitHubRepo: t.GitHubRepo, Number: gs.Number, Target: q.Target,
			Base: q.Base, Commit: q.Rebased, Method: t.queueMergeMethod(),
			Title: fmt.Sprintf("%s (#%d)", pullTitleOf(t.In.Plan.Description, t.In.TaskID), gs.Number)}
		event["pull_request"], event["url"], event["method"] = gs.Number, gs.URL, in.Method
		gaveWay, err := t.queueRemoteActivity(ctx, acts.QueueMergePull, in, &m)
		return m, gaveWay, err
	}
	var mv activities.QueueMergeResult
	in := activities.QueueMoveRemoteInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Remote: gs.Remote, Target: q.Target,
		Base: q.Base, Rebased: q.Rebased}
	gaveWay, err := t.queueRemoteActivity(ctx, acts.QueueMoveRemote, in, &mv)
	return activities.QueueMergePullResult{SHA: mv.Head, Moved: mv.Moved, Head: mv.Head}, gaveWay, err
}

// queueMergeMethod is delivery.merge when it names one, else GitHub's
// default (a merge commit): a queue merges whether or not the task's
// delivery merges on its own.
func (t *taskRun) queueMergeMethod() string {
	if t.In.Policy.Delivery.Merges() {
		return t.In.Policy.Delivery.Merge
	}
	return ""
}
