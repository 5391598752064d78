package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/task"
)

// waitFor waits until cond holds, the deadline passes (a zero deadline
// never does), or the task is interrupted. It reports a timeout.
func (t *taskRun) waitFor(ctx workflow.Context, deadline time.Time, cond func() bool) (bool, error) {
	full := func() bool { return cond() || t.yield(ctx) }
	if deadline.IsZero() {
		return false, workflow.Await(ctx, full)
	}
	d := deadline.Sub(workflow.Now(ctx))
	if d <= 0 {
		return !full(), nil
	}
	ok, err := workflow.AwaitWithTimeout(ctx, d, full)
	return !ok, err
}

// errMessage is an activity error's own message, without the SDK's wrapping.
func errMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

// check refuses a task whose plan or branch cannot be dispatched.
func (t *taskRun) check(ctx workflow.Context) (phase, error) {
	t.record("plan-"+t.In.TaskID, activities.KindEvent, t.In)
	probe := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, t.In.TaskID, workflow.Now(ctx), t.dispatchPayload())
	if err := probe.Validate(); err != nil {
		t.Reason = "refused: the plan is not a valid task_dispatch: " + err.Error()
		return phaseTerminate, nil
	}
	var out activities.CheckBranchResult
	actx := workflow.WithActivityOptions(ctx, gitOptions())
	err := workflow.ExecuteActivity(actx, acts.CheckBranch, activities.CheckBranchInput{
		Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch,
	}).Get(ctx, &out)
	if err != nil {
		t.Reason = "refused: " + errMessage(err)
		t.LastError = t.Reason
		return phaseTerminate, nil
	}
	t.Default = out.DefaultBranch
	return phaseApproval, nil
}

// approval holds the plan until an admin approves it, when the risk level
// (or the coordinator) asks for that.
func (t *taskRun) approval(ctx workflow.Context) (phase, error) {
	h := t.In.Policy.PlanApproval.For(t.In.Plan.RiskLevel).Stricter(t.In.Handling)
	if h == task.HandlingAuto {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "decision", Note: "plan approved automatically (risk " + string(t.In.Plan.RiskLevel) + ")"})
		return phaseDispatch, nil
	}
	prompt := fmt.Sprintf("Approve the plan of %s (%s risk, %d subtasks) on %s@%s?",
		t.In.TaskID, t.In.Plan.RiskLevel, len(t.Plan), t.In.Plan.Repo, t.In.Plan.Branch)
	o, err := t.decideOn(ctx, task.KindPlanApproval, prompt, nil, optApprove, optRejectPlan)
	if err != nil || o == nil {
		return phaseApproval, err
	}
	if o.Option == task.OptApprove {
		return phaseDispatch, nil
	}
	t.Reason = fmt.Sprintf("plan rejected by %s via %s%s", o.By, o.Channel, noteSuffix(o.Note))
	return phaseTerminate, nil
}

func (t *taskRun) dispatchPayload() *amp.TaskDispatch {
	p := t.In.Plan
	if st := t.subtask(); st != nil {
		p.Subtasks = []amp.Subtask{*st}
	}
	if t.FixNote != "" {
		p.Description = p.Description + "\n\n" + t.FixNote
	}
	return &p
}

// dispatch sends the current subtask to the executor.
func (t *taskRun) dispatch(ctx workflow.Context) (phase, error) {
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, t.In.TaskID, t.newTime(ctx, amp.TypeTaskDispatch), t.dispatchPayload())
	sec := int(t.In.Policy.AckTimeout(amp.TypeTaskDispatch) / time.Second)
	m.AckTimeoutSec = &sec
	m.ContextRef = t.FixRefs
	t.dropOutboxTo(amp.RoleExecutor)
	t.DispatchID = m.MsgID
	t.Result, t.Verdict = nil, nil
	t.FixNote, t.FixRefs = "", nil
	t.Rounds++
	t.setStatus(ctx, task.StatusDispatched, "")
	if err := t.send(ctx, m); err != nil {
		return phaseDispatch, err
	}
	now := workflow.Now(ctx)
	t.LastActive = now
	t.Deadline = now.Add(m.AckTimeout(t.In.Policy.AckTimeout(amp.TypeTaskDispatch)))
	return phaseAwaitAck, nil
}

// awaitAck waits for the executor's ACK of the dispatch; on a timeout the
// admins decide, and an ACK that comes late still counts.
func (t *taskRun) awaitAck(ctx workflow.Context) (phase, error) {
	for {
		if t.Result != nil {
			t.withdraw(ctx, "the executor sent its result")
			return phaseResult, nil
		}
		if _, ok := t.Acked[t.DispatchID]; ok {
			t.withdraw(ctx, "the executor ACKed late")
			now := workflow.Now(ctx)
			t.LastActive, t.Deadline = now, time.Time{}
			t.setStatus(ctx, task.StatusInProgress, "")
			return phaseAwaitResult, nil
		}
		if t.yield(ctx) {
			return phaseAwaitAck, nil
		}
		if o := t.Outcome; o != nil {
			t.Outcome = nil
			switch o.Option {
			case task.OptWait:
				t.Deadline = workflow.Now(ctx).Add(t.In.Policy.AckTimeout(amp.TypeTaskDispatch))
				continue
			case task.OptRedispatch:
				return phaseDispatch, nil
			default:
				return t.terminatedBy(o), nil
			}
		}
		dispatchID := t.DispatchID
		timedOut, err := t.waitFor(ctx, t.Deadline, func() bool {
			_, acked := t.Acked[dispatchID]
			return acked || t.Result != nil || t.Outcome != nil
		})
		if err != nil {
			return phaseAwaitAck, err
		}
		if timedOut && t.Pending == nil {
			t.Deadline = time.Time{}
			desc := fmt.Sprintf("The executor did not ACK %s within %s.", t.DispatchID, t.In.Policy.AckTimeout(amp.TypeTaskDispatch))
			esc := t.escalate(ctx, amp.EscAckTimeout, amp.SeverityWarning, amp.RoleSystem, desc, []string{t.DispatchID},
				"Redispatch the subtask", "Keep waiting for the executor", "Terminate the task")
			t.open(ctx, task.KindAckTimeout, desc+" Redispatch, keep waiting or terminate?", esc, optRedispatch, optWait, optTerminate)
		}
	}
}

// awaitResult waits for the executor's task_result; silence longer than
// the heartbeat timeout goes to the admins.
func (t *taskRun) awaitResult(ctx workflow.Context) (phase, error) {
	for {
		if t.Result != nil {
			t.withdraw(ctx, "the executor sent its result")
			return phaseResult, nil
		}
		if t.yield(ctx) {
			return phaseAwaitResult, nil
		}
		if o := t.Outcome; o != nil {
			t.Outcome = nil
			switch o.Option {
			case task.OptWait:
				t.LastActive = workflow.Now(ctx)
				continue
			case task.OptRedispatch:
				return phaseDispatch, nil
			default:
				return t.terminatedBy(o), nil
			}
		}
		next, err := t.watchHeartbeat(ctx, amp.RoleExecutor, func() bool { return t.Result != nil })
		if err != nil || next != "" {
			return next, err
		}
	}
}

// watchHeartbeat waits for done, a decision outcome or the heartbeat
// deadline of role; on the deadline it raises a heartbeat_timeout.
func (t *taskRun) watchHeartbeat(ctx workflow.Context, role amp.Role, done func() bool) (phase, error) {
	var deadline time.Time
	raisedAt := time.Time{}
	if t.Pending == nil {
		deadline = t.LastActive.Add(t.In.Policy.HeartbeatTimeout)
	} else {
		raisedAt = t.Pending.RaisedAt
	}
	last := t.LastActive
	timedOut, err := t.waitFor(ctx, deadline, func() bool {
		return done() || t.Outcome != nil || t.LastActive != last
	})
	if err != nil {
		return t.Phase, err
	}
	if t.Pending != nil && t.Pending.Kind == task.KindHeartbeatTimeout && t.LastActive.After(raisedAt) && t.Outcome == nil {
		t.withdraw(ctx, "the "+string(role)+" showed life again")
	}
	if timedOut && t.Pending == nil {
		desc := fmt.Sprintf("The %s has been silent for %s (no message or heartbeat).", role, t.In.Policy.HeartbeatTimeout)
		ref := t.DispatchID
		if role == amp.RoleReviewer {
			ref = t.RequestID
		}
		esc := t.escalate(ctx, amp.EscHeartbeatTimeout, amp.SeverityWarning, amp.RoleSystem, desc, []string{ref},
			"Send the work again", "Keep waiting", "Terminate the task")
		again := optRedispatch
		if role == amp.RoleReviewer {
			again = optReviewAgain
		}
		t.open(ctx, task.KindHeartbeatTimeout, desc+" Send again, keep waiting or terminate?", esc, again, optWait, optTerminate)
	}
	return "", nil
}

// takeResult ACKs the executor's result and checks it against git.
func (t *taskRun) takeResult(ctx workflow.Context) (phase, error) {
	res := t.Result
	t.ackFor(ctx, *res)
	r := res.Result()
	if r.CompletionStatus != amp.StatusComplete {
		t.setStatus(ctx, task.StatusAwaitingAdmin, string(r.CompletionStatus)+" result")
		desc := fmt.Sprintf("The executor reported %s on %s: %s", r.CompletionStatus, r.SubtaskID, strings.Join(r.Blockers, "; "))
		esc := t.escalateFor(task.KindPartialResult, func() *amp.Message {
			return t.escalate(ctx, amp.EscUnknown, amp.SeverityWarning, amp.RoleCoordinator, desc, []string{res.MsgID},
				"Redispatch with a note", "Accept the result as is", "Terminate the task")
		})
		return t.resultDecision(ctx, task.KindPartialResult, desc, esc)
	}
	var out activities.CheckResultOutput
	actx := workflow.WithActivityOptions(ctx, gitOptions())
	err := workflow.ExecuteActivity(actx, acts.CheckResult, activities.CheckResultInput{
		TaskID: t.In.TaskID, MsgID: res.MsgID, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch,
		Commit: r.CommitHash, Claimed: r.DiffSummary, DefaultBranch: t.Default,
	}).Get(ctx, &out)
	if err != nil {
		t.LastError = "checking the result against git: " + errMessage(err)
		t.setStatus(ctx, task.StatusAwaitingAdmin, "result not in git")
		desc := fmt.Sprintf("The result %s cannot be checked against git: %s", res.MsgID, errMessage(err))
		esc := t.escalateFor(task.KindResultProblem, func() *amp.Message {
			return t.escalate(ctx, amp.EscConflict, amp.SeverityWarning, amp.RoleCoordinator, desc, []string{res.MsgID},
				"Redispatch with a note", "Accept the result as is", "Terminate the task")
		})
		return t.resultDecision(ctx, task.KindResultProblem, desc, esc)
	}
	if out.Violation != "" {
		t.setStatus(ctx, task.StatusSuspended, "branch violation")
		desc := fmt.Sprintf("Branch violation on %s: %s", res.MsgID, out.Violation)
		esc := t.escalateFor(task.KindBranchViolation, func() *amp.Message {
			return t.escalate(ctx, amp.EscBranchViolation, amp.SeverityCritical, amp.RoleCoordinator, desc, []string{t.DispatchID, res.MsgID},
				"Redispatch with guidance to work on "+t.In.Plan.Branch, "Terminate the task")
		})
		o, err := t.decideOn(ctx, task.KindBranchViolation, desc+" Redispatch with guidance or terminate?", esc, optGuide, optTerminate)
		if err != nil || o == nil {
			return phaseResult, err
		}
		if o.Option == task.OptRedispatch {
			t.FixNote, t.FixRefs = "Admin guidance: "+o.Note, []string{res.MsgID}
			return phaseDispatch, nil
		}
		return t.terminatedBy(o), nil
	}
	t.DiffURL, t.Mismatches = out.DiffURL, out.Mismatches
	if len(out.Mismatches) > 0 {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "check", MsgID: res.MsgID, Note: "diff_summary does not match git: " + strings.Join(out.Mismatches, "; ")})
	}
	return phaseCI, nil
}

// resultDecision asks the admins what to do with a result that cannot
// go on to review as it is.
func (t *taskRun) resultDecision(ctx workflow.Context, kind task.DecisionKind, desc string, esc *amp.Message) (phase, error) {
	res := t.Result
	o, err := t.decideOn(ctx, kind, desc+" Redispatch with a note, accept as is, or terminate?", esc,
		task.Option{ID: task.OptRedispatch, Label: "Redispatch with a note", NoteRequired: true}, optAccept, optTerminate)
	if err != nil || o == nil {
		return phaseResult, err
	}
	switch o.Option {
	case task.OptRedispatch:
		t.FixNote = "Admin note: " + o.Note
		if b := res.Result().Blockers; len(b) > 0 {
			t.FixNote += "\nBlockers you reported: " + strings.Join(b, "; ")
		}
		t.FixRefs = []string{res.MsgID}
		return phaseDispatch, nil
	case task.OptAccept:
		return phaseNextSubtask, nil
	}
	return t.terminatedBy(o), nil
}

// ackFor writes the ACK record ampflow owes for an agent's message.
func (t *taskRun) ackFor(ctx workflow.Context, m amp.Message) {
	if _, done := t.Acked[m.MsgID]; done && t.Acked[m.MsgID] != "" {
		return
	}
	a := amp.NewAck(amp.RoleCoordinator, m, t.newTime(ctx, amp.AckPrefix))
	t.Seen[a.MsgID] = recordDigest(amp.Record{Ack: &a})
	t.Acked[m.MsgID] = a.MsgID
	t.record(a.MsgID, activities.KindAck, a)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "ack", MsgID: a.MsgID, From: string(amp.RoleCoordinator), Note: "ack of " + m.MsgID})
	t.snapshot()
}
