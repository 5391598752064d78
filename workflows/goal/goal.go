// Package goal is the goal workflow: it owns one goal's graph of tasks,
// asks the admins to approve the graph as one plan, then starts each task
// once the tasks it is blocked by are done, in parallel where the graph
// allows, each on its own branch made from the target's head at that
// time.
package goal

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	goalacts "github.com/ampflow/ampflow/activities/goal"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// Activities are called through typed nil pointers, so tests can mock them.
var (
	acts  *activities.Activities
	gacts *goalacts.Goal
)

// Input is what a goal workflow starts with.
type Input struct {
	Goal goal.Goal `json:"goal"`
	// Coordinator is who started the goal (the API token's name); each
	// task is started as theirs.
	Coordinator string `json:"coordinator,omitempty"`
	// OverlapEvery is how often the files the running tasks' branches
	// change are compared; zero is DefaultOverlapEvery.
	OverlapEvery time.Duration `json:"overlap_every,omitempty"`
	// MaxHistory is the history length past which the goal continues as
	// new; zero is DefaultMaxHistory. Temporal's own suggestion counts too.
	MaxHistory int `json:"max_history,omitempty"`
	// PlannerRounds bounds the graphs the planner proposes to the
	// admins when the goal has no tasks (goals.planner_rounds); zero is
	// DefaultPlannerRounds.
	PlannerRounds int `json:"planner_rounds,omitempty"`
	// Carried is the goal's state after a continue-as-new; nil on a
	// fresh start.
	Carried *Carried `json:"carried,omitempty"`
}

// DefaultMaxHistory is the history length past which a goal continues as
// new unless its input says.
const DefaultMaxHistory = 10000

// Carried is what a goal carries across a continue-as-new: its state,
// its decisions, its policy and its counts.
type Carried struct {
	State     goal.State   `json:"state"`
	Decisions decide.State `json:"decisions"`
	Policy    task.Policy  `json:"policy"`
	// Attempts counts each task's starts, by key.
	Attempts map[string]int `json:"attempts,omitempty"`
	Asked    string         `json:"asked,omitempty"`
	Told     []string       `json:"told,omitempty"`
}

// DefaultOverlapEvery is how often a goal compares its running tasks'
// changed files unless its input says.
const DefaultOverlapEvery = 30 * time.Second

// WorkflowID is the workflow id of goal id, and the subject of its
// decisions and records.
func WorkflowID(id string) string { return goal.WorkflowID(id) }

// Goal is the workflow of one goal.
func Goal(ctx workflow.Context, in Input) (goal.State, error) {
	r := &run{
		State: goal.State{Goal: in.Goal, Status: goal.StatusAwaitingApproval, StartedAt: workflow.Now(ctx)},
		in:    in,
		id:    WorkflowID(in.Goal.ID),
		log:   log.With(workflow.GetLogger(ctx), "goal", in.Goal.ID),
	}
	if len(in.Goal.Tasks) == 0 {
		// The planner proposes the graph.
		r.Status, r.Planned = goal.StatusPlanning, true
	}
	for _, t := range in.Goal.Tasks {
		r.Tasks = append(r.Tasks, goal.TaskState{Key: t.Key, Status: goal.TaskWaiting, BlockedBy: t.BlockedBy,
			WaitingOn: slices.Clone(t.BlockedBy), Repo: t.Plan.Repo, Branch: t.Plan.Branch})
	}
	if c := in.Carried; c != nil {
		r.State, r.decisions, r.policy, r.asked, r.told = c.State, c.Decisions, c.Policy, c.Asked, c.Told
		r.attempts = map[int]int{}
		for i, t := range r.Tasks {
			r.attempts[i] = c.Attempts[t.Key]
		}
		r.in.Carried = nil
	}
	r.engine = decide.New(&r.decisions, r.id, &r.policy.Decisions, host{r})
	if err := r.setup(ctx); err != nil {
		return r.State, err
	}
	if in.Carried != nil {
		r.resume(ctx)
		return r.loop(ctx)
	}
	return r.run(ctx)
}

// resume takes up the tasks a continue-as-new left: a running task is
// waited for again; one that was starting is started again under the
// same request key, which answers with the task its first start made.
func (r *run) resume(ctx workflow.Context) {
	for i := range r.Tasks {
		switch t := &r.Tasks[i]; t.Status {
		case goal.TaskRunning:
			workflow.Go(ctx, func(ctx workflow.Context) { r.awaitTask(ctx, i, t.TaskID) })
		case goal.TaskStarting:
			t.Status = goal.TaskWaiting
			r.attempts[i]--
		}
	}
	workflow.Go(ctx, r.watchOverlaps)
}

// continueAsNew carries the goal into a new run once its effects are
// written and its handlers done.
func (r *run) continueAsNew(ctx workflow.Context) (goal.State, error) {
	if err := workflow.Await(ctx, func() bool { return len(r.queue) == 0 && workflow.AllHandlersFinished(ctx) }); err != nil {
		return r.State, err
	}
	c := &Carried{State: r.snapshot(), Decisions: r.decisions, Policy: r.policy, Asked: r.asked, Told: r.told, Attempts: map[string]int{}}
	c.State.Pending = nil
	for i, t := range r.Tasks {
		c.Attempts[t.Key] = r.attempts[i]
	}
	in := r.in
	in.Carried = c
	return r.State, workflow.NewContinueAsNewError(ctx, Goal, in)
}

// tooLong says whether the history is long enough to continue as new.
func (r *run) tooLong(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	limit := r.in.MaxHistory
	if limit <= 0 {
		limit = DefaultMaxHistory
	}
	return info.GetContinueAsNewSuggested() || historyLength(ctx) >= limit
}

// historyLength is the workflow's history length so far; tests, whose
// environment keeps no history, replace it.
var historyLength = func(ctx workflow.Context) int { return workflow.GetInfo(ctx).GetCurrentHistoryLength() }

type run struct {
	goal.State
	in        Input
	id        string
	log       log.Logger
	decisions decide.State
	policy    task.Policy
	engine    *decide.Engine
	// asked is the key of the task the open blocked decision is about.
	asked string
	// attempts counts each task's starts, by index.
	attempts map[int]int
	// told are the overlaps told already, "a|b|files".
	told []string
	// changed is set when a task moves: the run loop looks again.
	changed bool
	// head is the target's head when the goal started: the planner reads
	// it.
	head  string
	queue []effect
	rev   int64
}

type effect struct {
	record  *activities.RecordEntry
	pending bool
	notice  *notify.Input
	tell    *goalacts.TellTaskInput
}

func (r *run) setup(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, goal.QueryState, func() (goal.State, error) { return r.snapshot(), nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, task.UpdateDecide, r.decide,
		workflow.UpdateHandlerOptions{Validator: r.validateDecide}); err != nil {
		return err
	}
	// The tasks' moves in the merge queue. Like the queue itself, this
	// has no version branch: nothing is released yet (see workflows.Task).
	moves := workflow.GetSignalChannel(ctx, task.SignalQueueMove)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var mv task.QueueMove
			moves.Receive(ctx, &mv)
			r.queueMove(mv)
		}
	})
	r.engine.Start(ctx)
	workflow.Go(ctx, r.drain)
	return nil
}

func (r *run) snapshot() goal.State {
	s := r.State
	s.Tasks = slices.Clone(r.Tasks)
	s.Queue = slices.Clone(r.Queue)
	s.Proposals = slices.Clone(r.Proposals)
	if d := r.engine.Pending(); d != nil {
		c := *d
		s.Pending = &c
	}
	return s
}

func (r *run) run(ctx workflow.Context) (goal.State, error) {
	b, _ := json.Marshal(r.in.Goal)
	r.queue = append(r.queue, effect{record: &activities.RecordEntry{ID: r.id + "-goal", Kind: kindGoal, Body: b, RecordedAt: workflow.Now(ctx)}})
	if err := r.resolveTarget(ctx); err != nil {
		return r.end(ctx, goal.StatusFailed, "the target: "+err.Error())
	}
	if err := r.takePolicy(ctx); err != nil {
		return r.end(ctx, goal.StatusFailed, "no policy: "+err.Error())
	}
	var ok bool
	var err error
	if r.Planned {
		ok, err = r.planAndApprove(ctx)
	} else {
		ok, err = r.approve(ctx)
	}
	var planner *errPlanner
	if errors.As(err, &planner) {
		return r.end(ctx, goal.StatusFailed, planner.msg)
	}
	if err != nil {
		return r.State, err
	}
	if !ok {
		return r.end(ctx, goal.StatusRejected, r.Reason)
	}
	r.Status = goal.StatusRunning
	workflow.Go(ctx, r.watchOverlaps)
	return r.loop(ctx)
}

// loop starts the tasks whose blockers are done and follows them until
// every task is done, the admins abandon the goal, or the history is
// long enough to continue as new.
func (r *run) loop(ctx workflow.Context) (goal.State, error) {
	for {
		if r.tooLong(ctx) {
			return r.continueAsNew(ctx)
		}
		r.changed = false
		r.startReady(ctx)
		r.holdDependents()
		if r.all(goal.TaskDone) {
			return r.end(ctx, goal.StatusDone, "")
		}
		if err := r.askAboutTerminated(ctx); err != nil {
			return r.State, err
		}
		err := workflow.Await(ctx, func() bool { return r.changed || r.engine.Answered(goal.DecisionBlocked) })
		if err != nil {
			return r.State, err
		}
		if o := r.engine.Take(goal.DecisionBlocked); o != nil {
			if done := r.takeBlocked(ctx, *o); done {
				return r.end(ctx, goal.StatusTerminated, r.Reason)
			}
		}
	}
}

// resolveTarget finds the target branch (the repository's default when
// the goal names none).
func (r *run) resolveTarget(ctx workflow.Context) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{activities.ErrBranchMissing}},
	})
	var out goalacts.TargetResult
	if err := workflow.ExecuteActivity(actx, gacts.GoalTarget, goalacts.TargetInput{Repo: r.Goal.Repo, Target: r.Goal.Target}).Get(ctx, &out); err != nil {
		return err
	}
	r.Target, r.head = out.Target, out.Head
	for i, t := range r.Goal.Tasks {
		if t.Plan.Branch == r.Target {
			return fmt.Errorf("tasks[%d].plan.branch is the target %q", i, r.Target)
		}
	}
	return nil
}

// takePolicy reads the worker's policy: its admins, plan approval and
// the decision engine's quorum, reminders and expiry.
func (r *run) takePolicy(ctx workflow.Context) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrNoPolicy}},
	})
	var out activities.PolicyResult
	if err := workflow.ExecuteLocalActivity(lctx, acts.TaskPolicy, activities.PolicyInput{TaskID: r.id}).Get(ctx, &out); err != nil {
		return err
	}
	r.policy = out.Policy
	return nil
}

// approve asks the admins to approve the graph as one plan, bound by
// digest to the whole of it and its target, when the plan approval of
// any of its tasks' risk levels asks an admin, or the planner proposed
// it (its risk levels are the planner's word); otherwise the graph is
// approved automatically.
func (r *run) approve(ctx workflow.Context) (bool, error) {
	approves := r.approves()
	dg, err := decision.Digest(approves)
	if err != nil {
		return false, err
	}
	r.Digest = dg
	risk := r.risk()
	if r.policy.PlanApproval.For(risk) == task.HandlingAuto && !r.Planned {
		r.Approval = &decision.Outcome{Subject: r.id, Kind: goal.DecisionGoalPlan, Option: decision.OptApprove, By: decision.By,
			Channel: decision.ChannelSystem, At: workflow.Now(ctx), Digest: dg, Note: "approved automatically (risk " + string(risk) + ")"}
		return true, nil
	}
	keys := make([]string, len(r.Goal.Tasks))
	for i, t := range r.Goal.Tasks {
		keys[i] = t.Key
	}
	_, err = r.engine.Raise(ctx, decide.Request{
		Kind:   goal.DecisionGoalPlan,
		Prompt: r.approvePrompt(keys),
		Options: []decision.Option{
			{ID: decision.OptApprove, Label: "Approve"},
			{ID: decision.OptReject, Label: "Reject"},
		},
		Context:  decision.Context{Description: r.Goal.Description, Risk: risk, Extra: map[string]any{"goal_id": r.Goal.ID, "target": r.Target, "tasks": keys}},
		Approves: approves,
		Required: r.policy.Decisions.Quorum.For(risk),
		OnExpiry: decision.OptReject,
	})
	if err != nil {
		return false, err
	}
	if err := workflow.Await(ctx, func() bool { return r.engine.Answered(goal.DecisionGoalPlan) }); err != nil {
		return false, err
	}
	o := r.engine.Take(goal.DecisionGoalPlan)
	r.Approval = o
	if o.Option == decision.OptApprove {
		return true, nil
	}
	r.Reason = fmt.Sprintf("the graph was rejected by %s via %s", o.By, o.Channel)
	if o.Note != "" {
		r.Reason += ": " + o.Note
	}
	return false, nil
}

// approves is what the plan decision approves: the goal and its target.
func (r *run) approves() any {
	return struct {
		Goal   goal.Goal `json:"goal"`
		Target string    `json:"target"`
	}{r.Goal, r.Target}
}

// risk is the highest risk level of the goal's tasks.
func (r *run) risk() amp.Risk {
	rank := map[amp.Risk]int{amp.RiskLow: 0, amp.RiskMedium: 1, amp.RiskHigh: 2}
	risk := amp.RiskLow
	for _, t := range r.Goal.Tasks {
		if rank[t.Plan.RiskLevel] > rank[risk] {
			risk = t.Plan.RiskLevel
		}
	}
	return risk
}

// all says whether every task is in status s.
func (r *run) all(s goal.TaskStatus) bool {
	for _, t := range r.Tasks {
		if t.Status != s {
			return false
		}
	}
	return true
}

func (r *run) index(key string) int {
	return slices.IndexFunc(r.Tasks, func(t goal.TaskState) bool { return t.Key == key })
}

// end ends the goal in status s, once every effect is written and every
// handler has finished.
func (r *run) end(ctx workflow.Context, s goal.Status, reason string) (goal.State, error) {
	r.Status, r.Reason, r.EndedAt = s, reason, workflow.Now(ctx)
	r.engine.Withdraw(ctx, "the goal ended "+string(s))
	b, _ := json.Marshal(map[string]any{"status": s, "reason": reason})
	r.queue = append(r.queue, effect{record: &activities.RecordEntry{ID: r.id + "-end", Kind: kindGoal, Body: b, RecordedAt: r.EndedAt}})
	if err := workflow.Await(ctx, func() bool { return len(r.queue) == 0 }); err != nil {
		return r.State, err
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return r.State, err
	}
	return r.snapshot(), nil
}

// kindGoal is the record kind of a goal's own records (its graph, its
// tasks' starts and ends, its end).
const kindGoal ssot.RecordKind = "goal"

func (r *run) validateDecide(a decision.Answer) error {
	if r.engine.Pending() == nil {
		return refusal.New(task.CodeStaleDecision, "decision_id: goal %s has no decision open", r.Goal.ID)
	}
	_, err := r.engine.Check(a)
	return err
}

func (r *run) decide(ctx workflow.Context, a decision.Answer) (task.DecideResult, error) {
	res, err := r.engine.Answer(ctx, a)
	if err != nil {
		return task.DecideResult{}, err
	}
	if res.Outcome == nil {
		p := res.Open.Progress()
		return task.DecideResult{Status: task.Status(r.Status), Decision: res.Open, Progress: &p, Note: res.Note}, nil
	}
	return task.DecideResult{Outcome: *res.Outcome, Status: task.Status(r.Status)}, nil
}
