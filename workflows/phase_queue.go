package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// phaseQueue is the merge queue of the task's target (task.Input.Queue):
// entered after the final approval, left merged, for a round of the
// executor's, or for the admins. It adds commands to a task's history
// with no version branch: nothing is released yet (see Task).
const phaseQueue phase = "queue"

// queueRecheck is how often a task waiting in the queue asks the lease
// system again, should a grant's signal be lost.
const queueRecheck = time.Minute

// queueState is what a task keeps of its place in the merge queue.
type queueState struct {
	task.QueueState
	// Lease is the target's lease, held while the task merges.
	Lease *task.BranchLease `json:"lease,omitempty"`
	// Waiting is set while the task waits for the target's lease;
	// Granted when the lease system signalled it may have it; Holder
	// is the task that holds it meanwhile.
	Waiting bool   `json:"waiting,omitempty"`
	Granted bool   `json:"granted,omitempty"`
	Holder  string `json:"holder,omitempty"`
	// The rebase being merged: the target's head it was made on, the
	// branch's head before, and the rebased head.
	Base    string `json:"base,omitempty"`
	Head    string `json:"head,omitempty"`
	Rebased string `json:"rebased,omitempty"`
	// GitHubQueue is set while the pull request is in GitHub's own merge
	// queue of the target.
	GitHubQueue bool `json:"github_queue,omitempty"`
	// TargetMoves counts the times in a row the target moved between a
	// rebase and its merge; at maxQueueMoves the admins decide.
	TargetMoves int `json:"target_moves,omitempty"`
}

// maxQueueMoves bounds the rebases a target that keeps moving under the
// queue (pushes by hand, or a remote the queue does not merge into)
// gets before the admins are asked.
const maxQueueMoves = 5

// targetMoved takes a target that moved to head between the rebase and
// the merge: the entry rebases again, with no round, up to maxQueueMoves
// times in a row.
func (t *taskRun) targetMoved(ctx workflow.Context, where, head string) (phase, error) {
	q := t.queue()
	q.Base, q.Head, q.Rebased = "", "", ""
	if q.TargetMoves++; q.TargetMoves >= maxQueueMoves {
		q.TargetMoves = 0
		return t.queueProblem(ctx, fmt.Sprintf("%s moved %d times in a row%s between the queue's rebase and its merge, last to %s.",
			q.Target, maxQueueMoves, where, shortHash(head)))
	}
	t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: fmt.Sprintf("%s moved to %s%s under the queue: rebasing again", q.Target, shortHash(head), where)})
	return phaseQueue, nil
}

var optRetryQueue = decision.Option{ID: task.OptRetryQueue, Label: "Try the merge queue again"}

func (t *taskRun) queue() *queueState {
	if t.Queue == nil {
		t.Queue = &queueState{QueueState: task.QueueState{Target: t.In.Queue.Target}}
	}
	return t.Queue
}

// queueOptions bound the queue's git work: a clone and a rebase, or the
// moves. The activities heartbeat, so a worker killed in one has it
// retried within seconds.
func queueOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    ShortHeartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: 30 * time.Second,
			MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{activities.ErrQueueRepo, activities.ErrTargetCheckedOut,
				activities.ErrNotWorkTree},
		},
	}
}

// mergeQueue takes the target's lease, rebases the task's branch onto
// the target's head, runs CI on the rebase, and moves the target to it.
// A conflict or failing CI is a round for the executor; past
// policy.max_ci_rounds rounds, the admins decide.
func (t *taskRun) mergeQueue(ctx workflow.Context) (phase, error) {
	if _, asked := t.decisions.Asking(task.KindMergeQueue); asked {
		return t.queueProblem(ctx, "")
	}
	q := t.queue()
	if q.Merged != "" {
		return phaseDone, nil
	}
	if q.Lease == nil {
		if q.Status != task.QueueQueued {
			q.Status, q.EnteredAt = task.QueueQueued, workflow.Now(ctx)
			t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: "entered the merge queue of " + q.Target})
			t.tellGoal(ctx)
		}
		held, problem, err := t.takeQueueLease(ctx)
		if problem != "" {
			return t.queueProblem(ctx, problem)
		}
		if err != nil || !held {
			return phaseQueue, err
		}
		q.Status = task.QueueMerging
		t.tellGoal(ctx)
	}
	if t.queueOnRemote() {
		return t.mergeQueueRemote(ctx)
	}
	branch := t.In.Plan.Branch
	if q.Rebased == "" {
		var out activities.QueueRebaseResult
		in := activities.QueueRebaseInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: branch, Target: q.Target}
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, queueOptions()), acts.QueueRebase, in).Get(ctx, &out); err != nil {
			return t.queueProblem(ctx, fmt.Sprintf("Rebasing %s onto %s failed: %s.", branch, q.Target, errMessage(err)))
		}
		if len(out.Conflicts) > 0 {
			return t.queueConflict(ctx, out)
		}
		q.Base, q.Head, q.Rebased = out.Base, out.Head, out.Rebased
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
	var m activities.QueueMergeResult
	in := activities.QueueMergeInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: branch, Target: q.Target,
		Base: q.Base, Head: q.Head, Rebased: q.Rebased}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, queueOptions()), acts.QueueMerge, in).Get(ctx, &m); err != nil {
		return t.queueProblem(ctx, fmt.Sprintf("Moving %s to %s failed: %s.", q.Target, shortHash(q.Rebased), errMessage(err)))
	}
	if m.Moved {
		return t.targetMoved(ctx, "", m.Head)
	}
	q.Merged, q.Status = m.Head, task.QueueMerged
	t.releaseQueueLease(ctx)
	t.record(ctx, fmt.Sprintf("queue-merge-%s", t.In.TaskID), ssot.KindEvent,
		map[string]any{"event": "merge", "queue": true, "target": q.Target, "base": q.Base, "head": q.Head, "merge_commit": m.Head, "branch_kept": m.BranchKept})
	t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: fmt.Sprintf("merged into %s as %s (queue)", q.Target, short7(m.Head))})
	if m.CheckoutKept != "" {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: fmt.Sprintf("the executor's checkout %s has changes not committed and keeps %s's old head", m.CheckoutKept, branch)})
	}
	if m.BranchKept != "" {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: fmt.Sprintf("%s is left at its own head: it is checked out in %s", branch, m.BranchKept)})
	}
	t.tellGoal(ctx)
	return phaseDone, nil
}

// queueConflict sends a branch that does not rebase onto its target
// back to its executor.
func (t *taskRun) queueConflict(ctx workflow.Context, out activities.QueueRebaseResult) (phase, error) {
	q, branch := t.queue(), t.In.Plan.Branch
	t.record(ctx, fmt.Sprintf("queue-conflict-%s-%d", t.In.TaskID, t.Rounds), ssot.KindEvent,
		map[string]any{"event": "merge_conflict", "queue": true, "target": q.Target, "base": out.Base, "head": out.Head, "files": out.Conflicts})
	what := "conflicts with " + q.Target + " in " + strings.Join(out.Conflicts, ", ")
	return t.queueRound(ctx, what, fmt.Sprintf(
		"Your branch %s no longer rebases cleanly onto %s, which moved to %s (merge queue, rebase round %d of %d). Conflicting files: %s. "+
			"Rebase %s onto %s's head (in a clone of the repository: git fetch origin, then git rebase origin/%s), resolve the conflicts so that both sides' work is kept, "+
			"and report the rebased commit. This is not a rejection.",
		branch, q.Target, shortHash(out.Base), q.Rounds+1, t.In.Policy.MaxCIRounds, strings.Join(out.Conflicts, ", "),
		branch, q.Target, q.Target))
}

func short7(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}

func (t *taskRun) queueLeaseInput(l *task.BranchLease) activities.BranchLeaseInput {
	in := activities.BranchLeaseInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: t.queue().Target, TTL: branchLeaseTTL}
	if l != nil {
		in.LeaseID, in.Version, in.Direct, in.AcquiredAt, in.ExpiresAt = l.LeaseID, l.Version, l.Direct, l.AcquiredAt, l.ExpiresAt
	}
	return in
}

// takeQueueLease holds the task until the target's lease is its own:
// the lease system queues the tasks of every goal that wait for one
// target, and signals the next as the holder lets go. held is false
// when the task must give way; problem says why the lease cannot be had.
func (t *taskRun) takeQueueLease(ctx workflow.Context) (held bool, problem string, err error) {
	q := t.queue()
	key := activities.BranchKey(t.In.Plan.Repo, q.Target)
	for {
		q.Granted = false
		var out activities.BranchLeaseResult
		err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, leaseLocalOptions()),
			acts.AcquireBranchLease, t.queueLeaseInput(nil)).Get(ctx, &out)
		if err != nil {
			return false, "The lease of " + key + " cannot be taken: " + errMessage(err) + ".", nil
		}
		if out.Lease != nil {
			q.Lease, q.Waiting, q.Holder = out.Lease, false, ""
			t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: "holds " + key + " (" + out.Lease.LeaseID + "): merging"})
			return true, "", nil
		}
		q.Waiting = true
		if q.Holder != out.Holder {
			q.Holder = out.Holder
			t.setStatus(ctx, task.StatusAwaitingLease, fmt.Sprintf("in the merge queue of %s, behind %s", q.Target, out.Holder))
		}
		if _, err := t.waitFor(ctx, workflow.Now(ctx).Add(queueRecheck), func() bool { return q.Granted }); err != nil {
			return false, "", err
		}
		if t.mustGiveWay(ctx) {
			return false, "", nil
		}
	}
}

// keepQueueLease renews the target's lease before the move when half
// its time to live has gone (a long CI run): a lease lost meanwhile
// sends the entry back to the queue, to rebase again once it is its
// turn, so the target never moves under another entry's lease.
func (t *taskRun) keepQueueLease(ctx workflow.Context) (bool, error) {
	q := t.queue()
	if workflow.Now(ctx).Before(q.Lease.ExpiresAt.Add(-branchLeaseTTL / 2)) {
		return true, nil
	}
	var out activities.BranchLeaseResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, leaseOptions()), acts.RenewBranchLease, t.queueLeaseInput(q.Lease)).Get(ctx, &out)
	switch {
	case err != nil:
		t.log.Warn("renewing the target's lease", "lease_id", q.Lease.LeaseID, "error", err)
		return true, nil
	case out.Lost != "":
		t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: "lost " + q.Lease.ResourceKey + ": " + out.Lost + "; back in the queue"})
		q.Lease, q.Status = nil, ""
		q.Base, q.Head, q.Rebased = "", "", ""
		return false, nil
	case out.Lease != nil:
		q.Lease.ExpiresAt, q.Lease.Version, q.Lease.Direct = out.Lease.ExpiresAt, out.Lease.Version, out.Lease.Direct
	}
	return true, nil
}

// queueGranted takes a grant of the target's lease; false when the
// grant is of another key.
func (t *taskRun) queueGranted(g task.LeaseGrant) bool {
	q := t.Queue
	if q == nil || !q.Waiting || g.Lease.ResourceKey != activities.BranchKey(t.In.Plan.Repo, q.Target) {
		return false
	}
	q.Granted = true
	return true
}

// releaseQueueLease gives up the target's lease, or the task's place in
// its queue: when the task merged, goes back to its executor, waits for
// the admins, or ends.
func (t *taskRun) releaseQueueLease(ctx workflow.Context) {
	q := t.Queue
	if q == nil || (q.Lease == nil && !q.Waiting) {
		return
	}
	in := t.queueLeaseInput(q.Lease)
	q.Lease, q.Waiting, q.Granted, q.Holder = nil, false, false, ""
	t.releaseThroughLeases(ctx, in)
}

// queueCI runs the task's CI on the rebase: green goes on to the merge,
// failing is a round for the executor.
func (t *taskRun) queueCI(ctx workflow.Context) (phase, bool, error) {
	q := t.queue()
	t.setStatus(ctx, task.StatusCICheck, "merge queue: CI on the rebase onto "+q.Target)
	if t.CIDeadline.IsZero() {
		t.CIDeadline = workflow.Now(ctx).Add(t.In.Policy.CITimeout)
	}
	for {
		var st activities.CIStatusResult
		in := activities.CIStatusInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch, Commit: q.Rebased, GitHubRepo: t.GitHubRepo,
			Last: !workflow.Now(ctx).Before(t.CIDeadline)}
		gaveWay, err := t.runUntilGiveWay(ctx, func(ctx workflow.Context) workflow.Future {
			return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ciOptions(t.In.Policy)), acts.CIStatus, in)
		}, &st)
		if gaveWay {
			return phaseQueue, false, nil
		}
		switch {
		case err != nil:
			t.CIDeadline = time.Time{}
			next, err := t.queueProblem(ctx, "CI of the rebase cannot be read: "+errMessage(err)+".")
			return next, false, err
		case st.State == activities.CIPassed || st.State == activities.CINone:
			t.CIDeadline = time.Time{}
			return phaseQueue, true, nil
		case st.State == activities.CIFailed:
			t.CIDeadline = time.Time{}
			t.record(ctx, fmt.Sprintf("queue-ci-%s-%d", t.In.TaskID, t.Rounds), ssot.KindEvent,
				map[string]any{"event": "queue_ci_failed", "target": q.Target, "commit": q.Rebased, "failing": st.Failing})
			note := fmt.Sprintf("CI fails on your branch %s rebased onto %s's head %s (merge queue, round %d of %d). Failing checks: %s. "+
				"Rebase %s onto %s's head (in a clone of the repository: git fetch origin, then git rebase origin/%s), make CI pass there, and report the new commit. This is not a rejection.",
				t.In.Plan.Branch, q.Target, shortHash(q.Base), q.Rounds+1, t.In.Policy.MaxCIRounds, strings.Join(st.Failing, ", "),
				t.In.Plan.Branch, q.Target, q.Target)
			if st.Detail != "" {
				note += "\nOutput:\n" + st.Detail
			}
			next, err := t.queueRound(ctx, "CI fails on the rebase onto "+q.Target+": "+strings.Join(st.Failing, ", "), note)
			return next, false, err
		}
		if !workflow.Now(ctx).Before(t.CIDeadline) {
			t.CIDeadline = time.Time{}
			next, err := t.queueProblem(ctx, "CI of the rebase was still pending after "+task.FormatDuration(t.In.Policy.CITimeout)+".")
			return next, false, err
		}
		wake := workflow.Now(ctx).Add(t.In.Policy.CIPollInterval)
		if wake.After(t.CIDeadline) {
			wake = t.CIDeadline
		}
		if _, err := t.waitFor(ctx, wake, func() bool { return false }); err != nil {
			return phaseQueue, false, err
		}
		if t.mustGiveWay(ctx) {
			return phaseQueue, false, nil
		}
	}
}

// queueRound sends the task back to its executor with note: the queue
// lets the target go meanwhile, and takes the task again after its
// review. Past policy.max_ci_rounds rounds the admins decide.
func (t *taskRun) queueRound(ctx workflow.Context, what, note string) (phase, error) {
	q := t.queue()
	q.Rounds++
	t.releaseQueueLease(ctx)
	q.Base, q.Head, q.Rebased = "", "", ""
	if q.Rounds > t.In.Policy.MaxCIRounds {
		return t.queueProblem(ctx, fmt.Sprintf("%s still cannot be merged into %s after %d rounds: it %s.", t.In.Plan.Branch, q.Target, q.Rounds-1, what))
	}
	q.Status = task.QueueRound
	t.tellGoal(ctx)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "queue", Note: fmt.Sprintf("merge queue: the branch %s; back to the executor (round %d of %d)", what, q.Rounds, t.In.Policy.MaxCIRounds)})
	t.Index = len(t.Plan) - 1
	t.RejectedCommit = ""
	t.FixNote, t.FixRefs = note, nil
	return phaseDispatch, nil
}

// queueProblem asks the admins what to do about a task the queue cannot
// merge: try again (with the round count reset), or terminate.
func (t *taskRun) queueProblem(ctx workflow.Context, desc string) (phase, error) {
	if desc != "" {
		t.LastError = desc
	}
	t.releaseQueueLease(ctx)
	t.setStatus(ctx, task.StatusAwaitingAdmin, "merge queue problem")
	o, err := t.decideOn(ctx, task.KindMergeQueue, desc+" Try the merge queue again or terminate?", nil, optRetryQueue, optTerminate)
	if err != nil || o == nil {
		return phaseQueue, err
	}
	if o.Option == task.OptRetryQueue {
		q := t.queue()
		t.LastError = ""
		q.Rounds, q.Status = 0, ""
		q.Base, q.Head, q.Rebased, q.GitHubQueue = "", "", "", false
		return phaseQueue, nil
	}
	return t.terminatedBy(o), nil
}

// tellGoal tells the task's goal of its move in the queue; a goal that
// has ended misses it, which nothing waits on.
func (t *taskRun) tellGoal(ctx workflow.Context) {
	spec := t.In.Queue
	if spec == nil || spec.Goal == "" {
		return
	}
	q := t.queue()
	q.Moves++
	mv := task.QueueMove{Seq: q.Moves, Key: spec.Key, TaskID: t.In.TaskID, Status: q.Status, Rounds: q.Rounds, Commit: q.Merged, At: workflow.Now(ctx)}
	workflow.SignalExternalWorkflow(ctx, spec.Goal, "", task.SignalQueueMove, mv)
}
