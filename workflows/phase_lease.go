package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// Branch lease timing: the task renews its lease every branchLeaseRenew,
// so a worker may be away for branchLeaseTTL - branchLeaseRenew before
// the lease runs out; a task ended from outside (terminated in Temporal)
// frees its branch within branchLeaseTTL.
const (
	branchLeaseTTL   = 10 * time.Minute
	branchLeaseRenew = 5 * time.Minute
	// defaultLeaseWait is policy.lease_wait when a policy has none.
	defaultLeaseWait = time.Hour
)

func leaseOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: 30 * time.Second,
		},
	}
}

// leaseLocalOptions run the take and the release of a branch lease as
// local activities: a free branch is one store transaction (see
// activities/lease.Branches), and a regular activity would add three
// history events, a trip through matching and a workflow task each.
func leaseLocalOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: 30 * time.Second,
		},
	}
}

func (t *taskRun) leaseInput(l *task.BranchLease) activities.BranchLeaseInput {
	in := activities.BranchLeaseInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch,
		TTL: branchLeaseTTL}
	if l != nil {
		in.LeaseID, in.Version, in.Direct, in.AcquiredAt, in.ExpiresAt = l.LeaseID, l.Version, l.Direct, l.AcquiredAt, l.ExpiresAt
	}
	return in
}

func (t *taskRun) leaseWait() time.Duration {
	if t.In.Policy.LeaseWait > 0 {
		return t.In.Policy.LeaseWait
	}
	return defaultLeaseWait
}

// takeLease holds the task until its branch is its own: at once when the
// branch is free, else in awaiting_lease until the lease workflow hands
// it the branch (task.SignalLeaseGranted) as the task before it ends.
// After policy.lease_wait the admins are asked whether to go on waiting.
func (t *taskRun) takeLease(ctx workflow.Context) (phase, error) {
	if t.Lease != nil {
		return phaseDispatch, nil
	}
	key := activities.BranchKey(t.In.Plan.Repo, t.In.Plan.Branch)
	var held *task.BranchLease
	for held == nil {
		// A grant signalled (t.Granted) only wakes the task: anything that
		// reaches Temporal can send one. The lease is the lease system's
		// answer to asking again: the lease once the key passed to the
		// task, its place in the queue otherwise.
		if signalled := t.Granted; signalled != nil || !t.LeaseWaiting {
			t.Granted = nil
			var out activities.BranchLeaseResult
			err := t.holdRecords(workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, leaseLocalOptions()),
				acts.AcquireBranchLease, t.leaseInput(nil))).Get(ctx, &out)
			if err != nil {
				t.Reason = "refused: the branch lease cannot be taken: " + errMessage(err)
				t.LastError = t.Reason
				return phaseTerminate, nil
			}
			if out.Lease != nil {
				held = out.Lease
				break
			}
			if signalled != nil {
				t.addTimeline(ctx, task.TimelineEntry{Kind: "lease", Note: fmt.Sprintf(
					"refused a grant of %s (%s) the lease system did not make: %s holds it", key, signalled.LeaseID, out.Holder)})
			}
			t.LeaseHolder = out.Holder
			if !t.LeaseWaiting {
				t.LeaseWaiting = true
				t.LeaseAskAt = workflow.Now(ctx).Add(t.leaseWait())
				t.setStatus(ctx, task.StatusAwaitingLease, fmt.Sprintf("%s is held by %s", key, out.Holder))
				// The store's copy lists the task by its status (GET /v1/tasks?status=).
				t.snapshot()
			}
			continue
		}
		if t.interrupted() || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return phaseLease, nil
		}
		if o := t.decisions.Take(task.KindLeaseWait); o != nil {
			if o.Option != task.OptWait {
				return t.terminatedBy(o), nil
			}
			t.LeaseAskAt = workflow.Now(ctx).Add(t.leaseWait())
			continue
		}
		_, asked := t.decisions.Asking(task.KindLeaseWait)
		if !asked && !workflow.Now(ctx).Before(t.LeaseAskAt) {
			prompt := fmt.Sprintf("%s has waited %s for %s, which %s holds. Keep waiting or terminate?",
				t.In.TaskID, t.leaseWait(), key, t.LeaseHolder)
			if err := t.raiseOnce(ctx, question{kind: task.KindLeaseWait, prompt: prompt,
				options: []decision.Option{optWait, optTerminate}, withdraw: "superseded"}); err != nil {
				return phaseLease, err
			}
			continue
		}
		done := func() bool {
			return t.Granted != nil || t.interrupted() || t.decisions.Answered(task.KindLeaseWait) ||
				workflow.GetInfo(ctx).GetContinueAsNewSuggested()
		}
		var err error
		if asked {
			err = workflow.Await(ctx, done)
		} else {
			_, err = workflow.AwaitWithTimeout(ctx, t.LeaseAskAt.Sub(workflow.Now(ctx)), done)
		}
		if err != nil {
			return phaseLease, fmt.Errorf("waiting for the branch lease of task %s: %w", t.In.TaskID, err)
		}
	}
	t.Lease, t.Granted = held, nil
	t.LeaseWaiting, t.LeaseHolder, t.LeaseAskAt = false, "", time.Time{}
	t.supersede(ctx, "the branch lease was granted", task.KindLeaseWait)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "lease", Note: "holds " + key + " (" + t.Lease.LeaseID + ")"})
	t.startRenewer(ctx)
	return phaseDispatch, nil
}

// leaseGranted takes the lease workflow's grant, which wakes a task
// waiting for its branch to ask the lease system again (takeLease); a
// task that has ended ignores it (its release at the end left the queue
// first).
func (t *taskRun) leaseGranted(g task.LeaseGrant) {
	if t.queueGranted(g) {
		return
	}
	if t.Status.Terminal() || t.Lease != nil || g.Lease.LeaseID == "" {
		return
	}
	l := g.Lease
	t.Granted = &l
}

// startRenewer renews the held lease every branchLeaseRenew on a durable
// timer, until the task ends or the lease is lost. A lost lease (expired
// while no worker ran the task, or released by an admin) is noted; the
// next dispatch waits for the branch again.
func (t *taskRun) startRenewer(ctx workflow.Context) {
	if t.Lease == nil || t.renewing {
		return
	}
	t.renewing = true
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { t.renewing = false }()
		actx := workflow.WithActivityOptions(ctx, leaseOptions())
		for {
			held := t.Lease
			due, err := t.deadlines.await(ctx, workflow.Now(ctx).Add(branchLeaseRenew), func() bool { return t.ending || t.Lease != held })
			if err != nil || !due {
				return
			}
			var out activities.BranchLeaseResult
			err = workflow.ExecuteActivity(actx, acts.RenewBranchLease, t.leaseInput(held)).Get(ctx, &out)
			if t.ending || t.Lease != held {
				return
			}
			switch {
			case err != nil:
				t.log.Warn("renewing the branch lease", "lease_id", held.LeaseID, "error", err)
			case out.Lost != "":
				t.Lease = nil
				t.addTimeline(ctx, task.TimelineEntry{Kind: "lease",
					Note: "lost " + held.ResourceKey + ": " + out.Lost + "; the next dispatch waits for it again"})
				return
			case out.Lease != nil:
				held.ExpiresAt, held.Version, held.Direct = out.Lease.ExpiresAt, out.Lease.Version, out.Lease.Direct
			}
		}
	})
}

// releaseLease gives up the branch lease, or the task's place in the
// branch's queue, as the task ends. A lease held directly in the store
// ends in the task's last record batch, with its final state
// (RecordInput.Release); any other goes through the lease system. A
// failure there leaves the lease to its TTL.
func (t *taskRun) releaseLease(ctx workflow.Context) {
	if t.Lease == nil && t.Granted == nil && !t.LeaseWaiting {
		return
	}
	in := t.leaseInput(t.Lease)
	direct := t.Lease != nil && t.Lease.Direct
	t.Lease, t.Granted, t.LeaseWaiting, t.LeaseHolder = nil, nil, false, ""
	if !direct {
		t.releaseThroughLeases(ctx, in)
		return
	}
	in.ReleasedAt = workflow.Now(ctx)
	t.release = &in
	// Said before the batch that ends it: the batch writes this note
	// and the release together, or neither (releaseMoved).
	t.addTimeline(ctx, task.TimelineEntry{Kind: "lease", Note: releasedNote(in)})
	t.wake()
}

func releasedNote(in activities.BranchLeaseInput) string {
	return "released " + activities.BranchKey(in.Repo, in.Branch)
}

// releaseThroughLeases gives the lease up through the lease system
// (ReleaseBranchLease) and notes how that went.
func (t *taskRun) releaseThroughLeases(ctx workflow.Context, in activities.BranchLeaseInput) {
	if err := releaseLeaseActivity(ctx, in); err != nil {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "lease", Note: releaseFailedNote(in, err)})
		return
	}
	t.addTimeline(ctx, task.TimelineEntry{Kind: "lease", Note: releasedNote(in)})
}

func releaseFailedNote(in activities.BranchLeaseInput, err error) string {
	return "releasing " + activities.BranchKey(in.Repo, in.Branch) + ": " + errMessage(err) + "; it ends with its TTL"
}

// releaseLeaseActivity runs ReleaseBranchLease; its error goes into a
// timeline note (releaseFailedNote) that names the lease.
func releaseLeaseActivity(ctx workflow.Context, in activities.BranchLeaseInput) error {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(dctx, leaseLocalOptions()), acts.ReleaseBranchLease, in).Get(dctx, nil)
}

// releaseMoved gives up a direct lease the record batch could not end:
// a lease workflow adopted it for a task queued behind, so the release
// goes through the lease system, and a failure replaces the note said
// before the batch.
func (t *taskRun) releaseMoved(ctx workflow.Context, in activities.BranchLeaseInput) {
	err := releaseLeaseActivity(ctx, in)
	if err == nil {
		return
	}
	note := releasedNote(in)
	for i := len(t.Timeline) - 1; i >= 0; i-- {
		if e := &t.Timeline[i]; e.Kind == "lease" && e.Note == note {
			e.Note = releaseFailedNote(in, err)
			return
		}
	}
}
