package workflows

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// nextSubtask moves on once a subtask is approved.
func (t *taskRun) nextSubtask(ctx workflow.Context) (phase, error) {
	t.addTimeline(ctx, task.TimelineEntry{Kind: "subtask", Note: "subtask " + t.subtask().SubtaskID + " done"})
	t.Index++
	t.SubtaskRejects, t.SubtaskCI, t.LastVerdictID, t.RejectedCommit = 0, 0, "", ""
	t.FixNote, t.FixRefs = "", nil
	t.Result, t.Verdict, t.Mismatches, t.DiffURL = nil, nil, nil, ""
	t.snapshot()
	if t.Index >= len(t.Plan) {
		return t.afterReviews(), nil
	}
	return phaseDispatch, nil
}

// finalApproval is the last gate before done.
func (t *taskRun) finalApproval(ctx workflow.Context) (phase, error) {
	if t.In.Policy.FinalApproval.For(t.In.Plan.RiskLevel) == task.HandlingAuto {
		return t.afterFinal(), nil
	}
	t.setStatus(ctx, task.StatusAwaitingAdmin, "final approval")
	prompt := fmt.Sprintf("All %d subtasks of %s are approved by review. Approve the task as done?", len(t.Plan), t.In.TaskID)
	o, err := t.decideOn(ctx, task.KindFinalApproval, prompt, nil, optApprove,
		decision.Option{ID: task.OptRedispatch, Label: "Redo the last subtask", NoteRequired: true}, optTerminate)
	if err != nil || o == nil {
		return phaseFinal, err
	}
	switch o.Option {
	case decision.OptApprove:
		return t.afterFinal(), nil
	case task.OptRedispatch:
		t.Index = len(t.Plan) - 1
		t.FixNote = "Admin note: " + o.Note
		// The admin turned the last result down: a result on the same
		// commit again is flagged like one after a rejected review.
		t.RejectedCommit = t.ResultCommit
		return phaseDispatch, nil
	}
	return t.terminatedBy(o), nil
}

func (t *taskRun) finish(ctx workflow.Context) (task.Result, error) {
	if t.Phase == phaseDone {
		t.setStatus(ctx, task.StatusDone, "")
	} else {
		t.setStatus(ctx, task.StatusTerminated, t.Reason)
	}
	if t.Phase != phaseDone {
		t.stopDeliveries(ctx)
	}
	if t.In.Policy.Runners {
		// Before the lease goes: the next task on the branch checks it out.
		t.cleanupWorktrees(ctx)
	}
	t.releaseQueueLease(ctx)
	t.releaseLease(ctx)
	t.withdrawDecision(ctx, "the task is "+string(t.Status))
	t.decisions.Drop()
	t.Outbox = nil
	t.Deadline = time.Time{}
	t.snapshot()
	t.ending = true
	if err := t.drain(ctx); err != nil {
		return task.Result{}, err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return task.Result{}, fmt.Errorf("waiting for handlers of task %s: %w", t.In.TaskID, err)
	}
	if r := t.Refused; r != nil {
		// Refused, not completed: Temporal shows the start failed, with
		// the reason, and its id may be started again.
		return t.result(), temporal.NewNonRetryableApplicationError(r.Reason, task.ErrRefused, nil, *r)
	}
	return t.result(), nil
}

// stopDeliveries stops the deliveries of a task that ended before they
// did (cancelled, terminated) and waits, a minute at most, until their
// workers say they stopped: no agent works on in a checkout the cleanup
// salvages and removes, nor runs again on a retry.
func (t *taskRun) stopDeliveries(ctx workflow.Context) {
	for _, role := range slices.Sorted(maps.Keys(t.deliveries)) {
		t.deliveries[role]()
	}
	if t.delivering == 0 {
		return
	}
	if ok, _ := workflow.AwaitWithTimeout(ctx, stopWait, func() bool { return t.delivering == 0 }); !ok {
		t.log.Warn("deliveries still going after the task ended", "task_id", t.In.TaskID, "waited", stopWait)
	}
}

// stopWait bounds stopDeliveries' wait: a worker that died says nothing
// until the activity's heartbeat timeout.
const stopWait = time.Minute

// cleanupWorktrees removes a runner's worktrees as the task ends, after
// committing what the executor left in its own to a salvage branch. A
// failure leaves them on disk, said in the timeline.
func (t *taskRun) cleanupWorktrees(ctx workflow.Context) {
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var out activities.CleanupWorktreesResult
	in := activities.CleanupWorktreesInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo}
	opts := cleanupOptions()
	if t.Host != "" {
		// The worktrees are on the task's host.
		opts.TaskQueue = activities.HostQueue(workflow.GetInfo(ctx).TaskQueueName, t.Host)
		opts.ScheduleToStartTimeout = t.hostTimeout()
	}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, opts), acts.CleanupWorktrees, in).Get(dctx, &out)
	switch {
	case scheduleToStartTimeout(err):
		t.addTimeline(ctx, task.TimelineEntry{Kind: "worktree", Note: fmt.Sprintf("the runner worktrees are left on host %s, which did not take their removal within %s",
			t.Host, task.FormatDuration(t.hostTimeout()))})
	case err != nil:
		t.addTimeline(ctx, task.TimelineEntry{Kind: "worktree", Note: "removing the runner worktrees: " + errMessage(err) + "; they are left on disk"})
	case out.Refused != "":
		t.addTimeline(ctx, task.TimelineEntry{Kind: "worktree", Note: out.Refused})
	case out.Salvaged != "" && out.SalvagedRun != "":
		t.addTimeline(ctx, task.TimelineEntry{Kind: "worktree", Note: "the uncommitted work the executor's run on " + out.SalvagedRun + " left is kept on branch " + out.Salvaged})
	case out.Salvaged != "":
		t.addTimeline(ctx, task.TimelineEntry{Kind: "worktree", Note: "the executor's uncommitted work is kept on branch " + out.Salvaged})
	case out.Finished:
		t.addTimeline(ctx, task.TimelineEntry{Kind: "worktree", Note: "finished removing the runner worktrees an interrupted cleanup left; nothing in them was salvaged"})
	}
}

func cleanupOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout:    2 * time.Minute,
		ScheduleToCloseTimeout: 10 * time.Minute,
		// The activity heartbeats: a cleanup a kill stopped is retried
		// within seconds, and the branch lease after it goes.
		HeartbeatTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: 30 * time.Second,
		},
	}
}

// terminatedBy ends the task on an admin's word.
func (t *taskRun) terminatedBy(o *decision.Outcome) phase {
	t.Reason = fmt.Sprintf("terminated by %s via %s%s", o.By, o.Channel, noteSuffix(o.Note))
	return phaseTerminate
}
