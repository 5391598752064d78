package aof

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// Actor of the steps the workflow takes by itself, as AOF's scheduler.
const actorScheduler = "scheduler"

// TaskWorkflow runs one AOF task until it is done. From the first release
// on, a change to the shape of its history goes behind
// workflow.GetVersion (docs/architecture.md), and test/replay replays the
// recorded histories (TestReplayAOF says how to record new ones).
func TaskWorkflow(ctx workflow.Context, in Input) (Task, error) {
	r := newRun(in)
	if err := r.setup(ctx); err != nil {
		return Task{}, err
	}
	return r.run(ctx)
}

// aofRun is the workflow's state: what Input carries, plus what is
// queued for the next save.
type aofRun struct {
	Input
	decisions *decide.Engine
	subject   string
	// decPolicy is the engine's policy, set once the worker's is read.
	decPolicy decision.Policy

	// events and artifacts wait for the next save; dirty says the task
	// changed since the last one.
	events    []ssot.AOFEvent
	artifacts map[string]ssot.AOFArtifact
	notices   []notify.Input
	records   []activities.RecordEntry
	// releases are the leases to give up after the next save.
	releases []aofacts.AOFLeaseInput
	dirty    bool
	// saved is the Rev of the last save.
	saved int64
	// agentDone is how the running agent review ended; stopAgent
	// cancels it; agentsOpen counts the reviews not closed yet, the
	// cancelled ones included, which the run outlives.
	agentDone  *AgentVerdict
	stopAgent  workflow.CancelFunc
	agentsOpen int
}

func newRun(in Input) *aofRun {
	r := &aofRun{Input: in, subject: WorkflowID(in.Task.TaskID), artifacts: map[string]ssot.AOFArtifact{}}
	if r.Task.WorkLog == nil {
		r.Task.WorkLog = []string{}
	}
	if r.Policy != nil {
		r.decPolicy = r.Policy.Decisions
	}
	r.decisions = decide.New(&r.Decisions, r.subject, &r.decPolicy, host{r})
	return r
}

func (r *aofRun) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryTask, func() (Task, error) { return r.view(), nil }); err != nil {
		return err
	}
	for _, u := range []struct {
		name      string
		handler   any
		validator any
	}{
		{UpdateMessage, r.message, r.validateMessage},
		{UpdateDispatch, r.dispatch, r.validateDispatch},
		{UpdateHeartbeat, r.heartbeat, r.validateHeartbeat},
		{UpdateSessionEnd, r.sessionEnd, func(SessionEndInput) error { return nil }},
		{UpdateSync, r.sync, func(SyncInput) error { return nil }},
		{task.UpdateDecide, r.decide, r.validateDecide},
	} {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler, workflow.UpdateHandlerOptions{Validator: u.validator}); err != nil {
			return err
		}
	}
	r.decisions.Start(ctx)
	return nil
}

func (r *aofRun) run(ctx workflow.Context) (Task, error) {
	if r.Task.Rev == 0 {
		r.touch(ctx)
		r.Task.CreatedAt = r.Task.UpdatedAt
		r.Task.Metadata.DelegationDepth = max(r.Task.Metadata.DelegationDepth, 0)
		r.event(ctx, EventTaskCreated, cmp.Or(r.Task.CreatedBy, actorScheduler), map[string]any{"status": r.Task.Status, "title": r.Task.Title,
			"parentTaskId": r.Task.ParentTaskID, "reviewRequired": r.Task.Metadata.ReviewRequired})
	} else {
		r.saved = r.Task.Rev
	}
	if r.Policy == nil {
		r.loadPolicy(ctx)
	}
	for {
		if r.dirty {
			if err := r.save(ctx); err != nil {
				return r.view(), err
			}
			continue
		}
		r.review(ctx)
		if r.dirty {
			continue
		}
		if r.Task.Status == StatusDone {
			if err := workflow.Await(ctx, func() bool { return r.dirty || workflow.AllHandlersFinished(ctx) && r.agentsOpen == 0 }); err != nil {
				return r.view(), err
			}
			if r.dirty {
				continue
			}
			return r.view(), nil
		}
		if r.mayContinueAsNew(ctx) {
			if err := workflow.Await(ctx, func() bool { return r.dirty || workflow.AllHandlersFinished(ctx) }); err != nil {
				return r.view(), err
			}
			if r.dirty {
				continue
			}
			return Task{}, workflow.NewContinueAsNewError(ctx, TaskWorkflow, r.Input)
		}
		if err := r.wait(ctx); err != nil {
			return r.view(), err
		}
	}
}

// wait blocks until the task changes, an admin answers, or the running
// agent's heartbeat expires: a durable timer at expiresAt.
func (r *aofRun) wait(ctx workflow.Context) error {
	woken := func() bool {
		return r.dirty || r.decisions.Answered(KindReview) || r.agentDone != nil || r.mayContinueAsNew(ctx)
	}
	hb := r.Task.Heartbeat
	if r.Task.Status != StatusInProgress || hb == nil || r.Task.Run == nil || r.Task.Run.Status != RunRunning {
		if err := workflow.Await(ctx, woken); err != nil {
			return fmt.Errorf("AOF task %s: waiting: %w", r.Task.TaskID, err)
		}
		return nil
	}
	left := hb.ExpiresAt.Sub(workflow.Now(ctx))
	if left > 0 {
		ok, err := workflow.AwaitWithTimeout(ctx, left, woken)
		if err != nil {
			return fmt.Errorf("AOF task %s: waiting for a heartbeat: %w", r.Task.TaskID, err)
		}
		if ok {
			return nil
		}
	}
	r.stale(ctx)
	return nil
}

// mayContinueAsNew reports whether the history is long enough to start
// afresh, and nothing holds it: a running agent review is a child of
// this run.
func (r *aofRun) mayContinueAsNew(ctx workflow.Context) bool {
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested() && r.agentsOpen == 0
}

func (r *aofRun) loadPolicy(ctx workflow.Context) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var acts *activities.Activities
	var out activities.PolicyResult
	if err := workflow.ExecuteActivity(actx, acts.TaskPolicy, activities.PolicyInput{TaskID: r.subject}).Get(ctx, &out); err != nil {
		workflow.GetLogger(ctx).Warn("no policy: nobody may decide this AOF task's review", "task", r.Task.TaskID, "error", err)
		r.Policy = &task.Policy{}
		return
	}
	r.Policy = &out.Policy
	r.decPolicy = out.Policy.Decisions
}

// touch marks a change: the task's Rev and UpdatedAt move on.
func (r *aofRun) touch(ctx workflow.Context) {
	r.Task.Rev++
	r.Task.UpdatedAt = workflow.Now(ctx).UTC()
	r.dirty = true
}

// event logs a protocol event with the next save.
func (r *aofRun) event(ctx workflow.Context, typ, actor string, payload map[string]any) {
	r.Seq++
	b, _ := json.Marshal(payload)
	r.events = append(r.events, ssot.AOFEvent{
		ID: fmt.Sprintf("%s-e%d", r.Task.TaskID, r.Seq), TaskID: r.Task.TaskID, Type: typ, Actor: actor,
		At: workflow.Now(ctx).UTC(), Payload: b,
	})
	r.dirty = true
}

// artifact writes a file of the task with the next save; nil deletes it.
func (r *aofRun) artifact(name string, v any) {
	a := ssot.AOFArtifact{TaskID: r.Task.TaskID, Name: name, Rev: r.Task.Rev}
	switch b := v.(type) {
	case nil:
		a.Deleted = true
	case string:
		a.Body = b
	default:
		j, _ := json.MarshalIndent(v, "", "  ")
		a.Body = string(j) + "\n"
	}
	r.artifacts[name] = a
	r.dirty = true
}

// save writes what changed: the task, its artifacts, its events and its
// open decisions, then tells the admins what they should hear of.
func (r *aofRun) save(ctx workflow.Context) error {
	body, err := json.Marshal(r.view())
	if err != nil {
		return fmt.Errorf("AOF task %s: %w", r.Task.TaskID, err)
	}
	in := aofacts.AOFSaveInput{Subject: r.subject, Save: ssot.AOFSave{
		Task: &ssot.AOFTask{TaskID: r.Task.TaskID, Status: string(r.Task.Status), ParentTaskID: r.Task.ParentTaskID,
			Rev: r.Task.Rev, CreatedAt: r.Task.CreatedAt, UpdatedAt: r.Task.UpdatedAt, Body: body},
		Events: r.events,
	}}
	for _, name := range workflow.DeterministicKeys(r.artifacts) {
		in.Save.Artifacts = append(in.Save.Artifacts, r.artifacts[name])
	}
	if d := r.decisions.Pending(); d != nil {
		db, _ := json.Marshal(d)
		in.Decisions = []ssot.PendingDecision{{ID: d.ID, Subject: r.subject, Kind: string(d.Kind), RaisedAt: d.RaisedAt, ExpiresAt: d.ExpiresAt, Body: db}}
	}
	in.Records = r.records
	notices, releases := r.notices, r.releases
	rev := r.Task.Rev
	r.events, r.artifacts, r.notices, r.records, r.releases, r.dirty = nil, map[string]ssot.AOFArtifact{}, nil, nil, nil, false
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	var acts *aofacts.AOF
	if err := workflow.ExecuteActivity(actx, acts.SaveAOF, in).Get(ctx, nil); err != nil {
		return fmt.Errorf("saving AOF task %s: %w", r.Task.TaskID, err)
	}
	r.saved = max(r.saved, rev)
	releaseLeases(ctx, r.Task.TaskID, releases)
	nctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var notify *activities.Activities
	for _, n := range notices {
		if err := workflow.ExecuteActivity(nctx, notify.Notify, n).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("notifying the admins", "task", r.Task.TaskID, "event", n.Event, "error", err)
		}
	}
	return nil
}

// awaitSaved returns once the task's state as it is now is saved, so an
// update answers with what the store holds.
func (r *aofRun) awaitSaved(ctx workflow.Context) error {
	// A task that moved into or out of review asks or withdraws its
	// review before answering, so the answer shows it.
	r.review(ctx)
	rev := r.Task.Rev
	if err := workflow.Await(ctx, func() bool { return r.saved >= rev }); err != nil {
		return fmt.Errorf("AOF task %s: waiting for the save: %w", r.Task.TaskID, err)
	}
	return nil
}

// view is the task as the API shows it.
func (r *aofRun) view() Task {
	t := r.Task
	t.WorkLog = append([]string{}, r.Task.WorkLog...)
	t.Review = r.decisions.PendingOf(KindReview)
	if r.AgentReview.Round > 0 || r.AgentReview.Fallback != "" {
		a := r.AgentReview
		t.AgentReview = &a
	}
	return t
}

// transition moves the task to status to, logging task.transitioned; a
// move to the status it has, or one not allowed, changes nothing.
func (r *aofRun) transition(ctx workflow.Context, to Status, actor, reason string) bool {
	from := r.Task.Status
	if from == to || !ValidTransition(from, to) {
		return false
	}
	r.Task.Status = to
	if from == StatusInProgress {
		r.dropLease()
	}
	r.event(ctx, EventTaskTransitioned, actor, map[string]any{"from": from, "to": to, "reason": reason})
	switch to {
	case StatusReview, StatusBlocked, StatusDone:
		r.notices = append(r.notices, notify.Input{TaskID: r.subject, Event: notify.Status,
			Status: task.Status(to), Text: fmt.Sprintf("%s (%s → %s, %s)", r.Task.Title, from, to, reason)})
	}
	return true
}

// applyOutcome applies a run result's completion transitions in order.
func (r *aofRun) applyOutcome(ctx workflow.Context, actor, reason string) []Status {
	var moved []Status
	for _, to := range ResolveCompletionTransitions(r.Task.Status, r.Task.Metadata.ReviewRequired, r.Task.Result.Outcome) {
		if r.transition(ctx, to, actor, reason) {
			moved = append(moved, to)
		}
	}
	return moved
}

// stale handles a heartbeat that expired: a run result decides where the
// task goes; without one it is reclaimed to ready and its run expires.
func (r *aofRun) stale(ctx workflow.Context) {
	r.touch(ctx)
	if res := r.Task.Result; res != nil {
		r.applyOutcome(ctx, actorScheduler, "stale_heartbeat_"+string(res.Outcome))
		if r.Task.Status != StatusInProgress {
			return
		}
	} else {
		r.transition(ctx, StatusReady, actorScheduler, ReasonStaleReclaim)
	}
	run := *r.Task.Run
	run.Status = RunExpired
	run.Metadata = map[string]any{"expiredAt": Stamp(workflow.Now(ctx)), "expiredReason": "stale_heartbeat"}
	r.Task.Run = &run
	r.artifact(ArtifactRun, run)
}

// RegisterOptions registers TaskWorkflow under WorkflowType.
func RegisterOptions() workflow.RegisterOptions { return workflow.RegisterOptions{Name: WorkflowType} }
