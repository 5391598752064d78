// Package workflows holds TaskWorkflow, the durable run of one AMP task
// from plan approval to done, and a typed client for it.
package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// phase is where the run loop stands; finer than task.Status.
type phase string

const (
	phaseCheck       phase = "check"
	phaseApproval    phase = "approval"
	phaseLease       phase = "lease"
	phaseDispatch    phase = "dispatch"
	phaseAwaitAck    phase = "await_ack"
	phaseAwaitResult phase = "await_result"
	phaseResult      phase = "result"
	phaseCI          phase = "ci"
	phaseReview      phase = "review"
	phaseAwaitReview phase = "await_review"
	phaseVerdict     phase = "verdict"
	phaseLock        phase = "lock"
	phaseNextSubtask phase = "next_subtask"
	phaseFinal       phase = "final"
	phaseDone        phase = "done"
	phaseTerminate   phase = "terminate"
)

// steps is the task's AMP/1.0 run, one phase to a line in protocol
// order: the method that runs the phase returns the phase to go to. A
// phase that must give way (a cancel, an agent's critical escalation, a
// continue-as-new) returns itself and is entered again; the run loop
// ends the task at phaseDone and phaseTerminate.
var steps = map[phase]func(*taskRun, workflow.Context) (phase, error){
	phaseCheck:       (*taskRun).check,         // plan: refuse a plan or branch that cannot be dispatched
	phaseApproval:    (*taskRun).approval,      // plan: the admins approve it when its risk_level asks for that
	phaseLease:       (*taskRun).takeLease,     // the branch's lease, held until the task ends: one task per branch
	phaseDispatch:    (*taskRun).dispatch,      // 01 task_dispatch: the subtask goes to the executor
	phaseAwaitAck:    (*taskRun).awaitAck,      // ACK of task_dispatch within its ack_timeout_sec (ACK on start)
	phaseAwaitResult: (*taskRun).awaitResult,   // execution: silence past the heartbeat timeout goes to the admins
	phaseResult:      (*taskRun).takeResult,    // 02 task_result: ACK it, check it against git; partial or failed goes to the admins
	phaseCI:          (*taskRun).ciGate,        // CI gating: failed CI goes back to the executor, not to review
	phaseReview:      (*taskRun).requestReview, // 03 review_request: the round goes to the reviewer
	phaseAwaitReview: (*taskRun).awaitReview,   // ACK of review_request, then the reviewer's verdict
	phaseVerdict:     (*taskRun).takeVerdict,   // 04 review_verdict: ACK it; low confidence goes to the admins
	phaseLock:        (*taskRun).lock,          // 05 escalation hallucination_lock: reject_count past the limit
	phaseNextSubtask: (*taskRun).nextSubtask,   // the next subtask, or the final approval after the last
	phaseFinal:       (*taskRun).finalApproval, // the admins approve the task as done
	phaseDeliver:     (*taskRun).deliver,       // delivery.push: push the result; open or update the pull request
	phasePRReview:    (*taskRun).prReview,      // delivery.pull_request: ready; GitHub reviews are a review round
	phaseMerge:       (*taskRun).merge,         // delivery.merge: merge with checks green; a conflict is a rebase round
	phaseQueue:       (*taskRun).mergeQueue,    // the target's merge queue: rebase, CI, move the target; a conflict is a round
}

// Task runs one AMP task from plan approval to done. The workflow carries
// the coordinator's protocol duties; agents and admins feed it messages
// through its updates.
//
// Versioning: nothing has been released, so every task runs the shape
// written here and no version branch is kept. From the first release on,
// every change to the commands a task writes goes behind
// workflow.GetVersion and gets a replay history in test/replay; see
// "Versioning and replay" in docs/architecture.md.
func Task(ctx workflow.Context, in task.Input) (task.Result, error) {
	t, err := newTaskRun(ctx, in)
	if err != nil {
		return task.Result{}, err
	}
	if err := t.setup(ctx); err != nil {
		return task.Result{}, err
	}
	return t.run(ctx)
}

// taskRun is one run of the workflow: the carried state plus what is
// rebuilt on every run.
type taskRun struct {
	*taskState
	log log.Logger
	// decisions is the decision engine over taskState.Decisions.
	decisions *decide.Engine
	// ending is set once the run ends or continues as new: handlers stop
	// waiting for the run loop.
	ending bool
	// deliveries stops the delivery still running for each agent.
	deliveries map[amp.Role]workflow.CancelFunc
	// delivering counts the deliveries still going.
	delivering int
	// effects is the context the record and notice loops are started in
	// when work is queued; they end when their queue is empty, so an idle
	// task keeps two coroutines rather than four.
	effects             workflow.Context
	recording, noticing bool
	// asking is set while the tool asks' loop runs (wakeTools).
	asking bool
	// renewing is set while the branch lease's renewer runs.
	renewing bool
	// deadlines are the timers the run's waits share.
	deadlines deadlines
	// holding is the local activity the record loop waits for before its
	// next batch (holdRecords).
	holding workflow.Future
	// validated is the submission the submit update's validator parsed
	// last, which its handler, run next, takes instead of parsing it again.
	validated struct {
		raw string
		rec amp.Record
	}
	// release is the end of the task's direct branch lease, which the
	// next record batch writes in its transaction (releaseLease).
	release *activities.BranchLeaseInput
	// checkedHead is the default branch's head the plan's check read at
	// checkedAt, for a plan approved automatically in the same workflow
	// task (workflow.Now has not moved).
	checkedHead string
	checkedAt   time.Time
}

func newTaskRun(ctx workflow.Context, in task.Input) (*taskRun, error) {
	var s *taskState
	if len(in.Carried) > 0 {
		s = &taskState{}
		if err := json.Unmarshal(in.Carried, s); err != nil {
			return nil, fmt.Errorf("restoring task %s after continue-as-new: %w", in.TaskID, err)
		}
		in.Carried = nil
		s.In = in
		if s.Acked == nil {
			s.Acked = map[string]string{}
		}
		if s.Seen == nil {
			s.Seen = map[string]string{}
		}
	} else {
		// Started when Temporal took the start, as its visibility says:
		// tasks started one after the other list in that order even when
		// their first workflow tasks run out of it.
		started := workflow.GetInfo(ctx).WorkflowStartTime
		if started.IsZero() {
			started = workflow.Now(ctx)
		}
		s = newTaskState(in, started)
	}
	t := &taskRun{
		taskState:  s,
		log:        log.With(workflow.GetLogger(ctx), "task_id", in.TaskID),
		deliveries: map[amp.Role]workflow.CancelFunc{},
	}
	t.decisions = decide.New(&s.Decisions, in.TaskID, &s.In.Policy.Decisions, decisionHost{t})
	return t, nil
}

func (t *taskRun) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, task.QueryState, func() (task.State, error) {
		return t.view(), nil
	}); err != nil {
		return fmt.Errorf("registering query %s: %w", task.QueryState, err)
	}
	updates := []struct {
		name    string
		handler any
		valid   any
	}{
		{task.UpdateSubmit, t.submit, t.validateSubmit},
		{task.UpdateDecide, t.decide, t.validateDecide},
		{task.UpdateCancel, t.cancel, t.validateCancel},
		{task.UpdateReplan, t.replan, t.validateReplan},
	}
	for _, u := range updates {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler,
			workflow.UpdateHandlerOptions{Validator: u.valid}); err != nil {
			return fmt.Errorf("registering update %s: %w", u.name, err)
		}
	}
	t.receiveSignals(ctx)
	if err := t.setupTools(ctx); err != nil {
		return err
	}
	t.effects = ctx
	t.wake()
	t.wakeTools()
	t.decisions.Start(ctx)
	return nil
}

// receiveSignals takes the task's signals in one coroutine: the
// workflow's dispatcher wakes every coroutine on each of its passes, so
// one selector over the five channels costs a fifth of a coroutine each.
// A signal waits in its channel while another's handler runs.
// The handlers block, when they do, in the coroutine's own context.
func (t *taskRun) receiveSignals(ctx workflow.Context) {
	workflow.Go(ctx, func(ctx workflow.Context) {
		sel := workflow.NewSelector(ctx)
		t.onHeartbeat(ctx, sel)
		t.onUsage(ctx, sel)
		t.onSteer(ctx, sel)
		sel.AddReceive(workflow.GetSignalChannel(ctx, task.SignalLeaseGranted), func(c workflow.ReceiveChannel, _ bool) {
			var g task.LeaseGrant
			c.Receive(ctx, &g)
			t.leaseGranted(g)
		})
		t.onGitHub(ctx, sel)
		for {
			sel.Select(ctx)
		}
	})
}

// onHeartbeat takes the agents' heartbeats.
func (t *taskRun) onHeartbeat(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(workflow.GetSignalChannel(ctx, task.SignalHeartbeat), func(c workflow.ReceiveChannel, _ bool) {
		var in task.HeartbeatInput
		c.Receive(ctx, &in)
		if in.Privileged() && !t.Status.Terminal() {
			// A redispatch or an admin's pass only signed: a raw
			// signal is dropped, its refusal kept in the error log.
			if err := t.verifyCommand(ctx, in.SignedAs); err != nil {
				t.log.Warn("refused a heartbeat", "from", in.From, "by", in.By, "error", err)
				return
			}
		}
		t.heartbeat(ctx, in)
	})
}

// run drives the task phase by phase until it ends or continues as new.
func (t *taskRun) run(ctx workflow.Context) (task.Result, error) {
	if t.Phase == phaseCheck {
		// Client.Start sets the attributes; upsert only for a start that did not.
		_, set := workflow.GetTypedSearchAttributes(ctx).GetKeyword(task.AttrStatus)
		if !set {
			t.upsertAttributes(ctx)
		}
	}
	t.startRenewer(ctx)
	for {
		if t.Cancel != nil && !t.Status.Terminal() {
			t.Reason = fmt.Sprintf("cancelled by %s: %s", t.Cancel.By, t.Cancel.Reason)
			t.Phase = phaseTerminate
		}
		if t.Phase == phaseDone || t.Phase == phaseTerminate {
			return t.finish(ctx)
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return t.continueAsNew(ctx)
		}
		if t.Interrupt != nil {
			if err := t.suspendForAgent(ctx); err != nil {
				return task.Result{}, err
			}
			continue
		}
		step, ok := steps[t.Phase]
		if !ok {
			return task.Result{}, fmt.Errorf("task %s: unknown phase %q", t.In.TaskID, t.Phase)
		}
		next, err := step(t, ctx)
		if err != nil {
			return task.Result{}, err
		}
		t.Phase = next
	}
}

func (t *taskRun) continueAsNew(ctx workflow.Context) (task.Result, error) {
	t.ending = true
	if err := t.drain(ctx); err != nil {
		return task.Result{}, err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return task.Result{}, fmt.Errorf("waiting for handlers of task %s: %w", t.In.TaskID, err)
	}
	carried, err := json.Marshal(t.taskState)
	if err != nil {
		return task.Result{}, fmt.Errorf("carrying task %s over: %w", t.In.TaskID, err)
	}
	in := t.In
	in.Carried = carried
	return task.Result{}, workflow.NewContinueAsNewError(ctx, Task, in)
}

// setStatus moves the task to a new status, keeps the timeline and the
// search attributes, and tells admins when asked to.
func (t *taskRun) setStatus(ctx workflow.Context, s task.Status, note string) {
	if t.Status == s {
		return
	}
	t.Status = s
	// The run being recovered has answered, or the task has moved on.
	t.Recovering = nil
	t.addTimeline(ctx, task.TimelineEntry{Kind: "status", Status: s, Note: note})
	if s != task.StatusDone {
		// Done is written by the workflow's completion instead: its
		// execution status Completed over a status that is not terminated
		// reads as done (Client.List), one visibility write fewer.
		t.upsertAttributes(ctx)
	}
	if t.In.Policy.StatusUpdates {
		t.notify(notify.Status, queuedNotice{Status: s, Text: note})
	}
}

// upsertAttributes writes the search attributes when one of them differs
// from what the workflow's visibility row holds. Each upsert is a
// visibility write on the server, so AmpStatus follows the status
// coarsely (task.AttrStatusOf): a lifecycle's agent turns, which the SSOT
// records exactly, cost none.
func (t *taskRun) upsertAttributes(ctx workflow.Context) {
	status, risk := task.AttrStatusOf(t.Status), string(t.In.Plan.RiskLevel)
	sa := workflow.GetTypedSearchAttributes(ctx)
	cur, _ := sa.GetKeyword(task.AttrStatus)
	curRisk, _ := sa.GetKeyword(task.AttrRisk)
	rejects, _ := sa.GetInt64(task.AttrRejectCount)
	repo, _ := sa.GetKeyword(task.AttrRepo)
	if cur == string(status) && curRisk == risk && rejects == int64(t.RejectCount) && repo == t.In.Plan.Repo {
		return
	}
	err := workflow.UpsertTypedSearchAttributes(ctx,
		task.AttrStatus.ValueSet(string(status)),
		task.AttrRisk.ValueSet(risk),
		task.AttrRejectCount.ValueSet(int64(t.RejectCount)),
		task.AttrRepo.ValueSet(t.In.Plan.Repo),
	)
	if err != nil {
		t.log.Warn("upserting search attributes", "error", err)
	}
}

func (t *taskRun) addTimeline(ctx workflow.Context, e task.TimelineEntry) {
	e.At = workflow.Now(ctx)
	t.UpdatedAt = e.At
	t.Timeline = append(t.Timeline, e)
}

// newTime returns the time an outgoing message of typ stands for: workflow
// time, moved on by a millisecond when its msg_id would clash.
func (t *taskRun) newTime(ctx workflow.Context, typ amp.Type) time.Time {
	at := workflow.Now(ctx)
	for {
		id := amp.MsgID(typ, t.In.TaskID, at)
		if _, taken := t.Seen[id]; !taken {
			return at
		}
		at = at.Add(time.Millisecond)
	}
}
