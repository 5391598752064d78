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
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// waitFor waits until cond holds, the deadline passes (a zero deadline
// never does), or the task is interrupted. It reports a timeout.
func (t *taskRun) waitFor(ctx workflow.Context, deadline time.Time, cond func() bool) (bool, error) {
	full := func() bool { return cond() || t.mustGiveWay(ctx) }
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
	refused := t.takePolicy(ctx)
	// The first record: the plan and the policy in effect.
	t.record(ctx, "plan-"+t.In.TaskID, activities.KindEvent, t.In)
	if refused != nil {
		t.Reason = "refused: " + errMessage(refused)
		t.LastError = t.Reason
		return phaseTerminate, nil
	}
	for i := range t.Plan {
		p := t.In.Plan
		p.Subtasks = t.Plan[i : i+1]
		probe := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, t.In.TaskID, workflow.Now(ctx), &p)
		if err := probe.Validate(); err != nil {
			t.Reason = fmt.Sprintf("refused: the dispatch of subtask %d would not be valid AMP: %s", i, strings.ReplaceAll(err.Error(), "\n", "; "))
			return phaseTerminate, nil
		}
	}
	var out activities.CheckBranchResult
	err := t.gitCheck(ctx, acts.CheckBranch, activities.CheckBranchInput{
		Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch,
	}).Get(ctx, &out)
	if err != nil {
		t.Reason = "refused: " + errMessage(err)
		t.LastError = t.Reason
		return phaseTerminate, nil
	}
	t.Default, t.GitHubRepo = out.DefaultBranch, out.GitHubRepo
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
	switch o.Option {
	case decision.OptApprove:
		return phaseDispatch, nil
	case task.OptReplan:
		// The plan changed under the question: ask again about the new one.
		return phaseApproval, nil
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

// ackWait is what the ACK wait of one sent message needs to know.
type ackWait struct {
	role   amp.Role
	msgID  string
	typ    amp.Type
	again  decision.Option // how to send it again
	reply  func() bool     // the agent's reply arrived (an implicit ACK)
	policy string          // what the admins are told to do
}

// awaitAckOf waits until the agent ACKs or replies; on the ACK deadline
// the admins decide, and an ACK that comes late still counts. It returns
// the phase to go to, or "" when the agent has ACKed.
func (t *taskRun) awaitAckOf(ctx workflow.Context, w ackWait, here phase) (phase, error) {
	kinds := []decision.Kind{task.KindAckTimeout, task.KindDeliveryFailed}
	for {
		if w.reply() || t.acked(w.msgID) {
			t.supersede(ctx, "the "+string(w.role)+" answered", kinds...)
			t.clearFailed()
			t.Deadline = time.Time{}
			t.LastActive = workflow.Now(ctx)
			return "", nil
		}
		if t.mustGiveWay(ctx) {
			return here, nil
		}
		if o := t.decisions.Take(kinds...); o != nil {
			t.clearFailed()
			switch o.Option {
			case task.OptWait:
				t.Deadline = workflow.Now(ctx).Add(t.In.Policy.AckTimeout(w.typ))
				continue
			case task.OptRedispatch, task.OptReviewAgain:
				t.Deadline = time.Time{}
				if w.role == amp.RoleExecutor {
					return phaseDispatch, nil
				}
				return phaseReview, nil
			}
			t.Deadline = time.Time{}
			return t.terminatedBy(o), nil
		}
		if f := t.failedToRaise(w.msgID); f != nil {
			if err := t.raiseFailed(ctx, f, w.again); err != nil {
				return here, err
			}
			continue
		}
		timedOut, err := t.waitFor(ctx, t.Deadline, func() bool {
			return w.reply() || t.acked(w.msgID) || t.decisions.Answered(kinds...) || t.failedToRaise(w.msgID) != nil
		})
		if err != nil {
			return here, err
		}
		if timedOut {
			t.Deadline = time.Time{}
			if _, open := t.decisions.Asking(kinds...); !open && t.failedToRaise(w.msgID) == nil {
				desc := fmt.Sprintf("The %s did not ACK %s within %s.", w.role, w.msgID, task.FormatDuration(t.In.Policy.AckTimeout(w.typ)))
				esc := t.escalate(ctx, amp.EscAckTimeout, amp.SeverityWarning, amp.RoleSystem, desc, []string{w.msgID},
					"Send it again", "Keep waiting for the "+string(w.role), "Terminate the task")
				t.withdrawDecision(ctx, "superseded by an ACK timeout")
				if err := t.ask(ctx, task.KindAckTimeout, desc+" "+w.policy, esc, w.again, optWait, optTerminate); err != nil {
					return here, err
				}
			}
		}
	}
}

// awaitAck waits for the executor's ACK of the dispatch.
func (t *taskRun) awaitAck(ctx workflow.Context) (phase, error) {
	next, err := t.awaitAckOf(ctx, ackWait{role: amp.RoleExecutor, msgID: t.DispatchID, typ: amp.TypeTaskDispatch,
		again: optRedispatch, reply: func() bool { return t.Result != nil },
		policy: "Redispatch, keep waiting or terminate?"}, phaseAwaitAck)
	if err != nil || next != "" {
		return next, err
	}
	if t.Result != nil {
		return phaseResult, nil
	}
	t.setStatus(ctx, task.StatusInProgress, "")
	return phaseAwaitResult, nil
}

// awaitResult waits for the executor's task_result; silence longer than
// the heartbeat timeout goes to the admins.
func (t *taskRun) awaitResult(ctx workflow.Context) (phase, error) {
	next, err := t.awaitReply(ctx, amp.RoleExecutor, optRedispatch, func() bool { return t.Result != nil }, phaseAwaitResult)
	if err != nil || next != "" {
		return next, err
	}
	return phaseResult, nil
}

// awaitReply waits for an agent's reply, raising a heartbeat_timeout on
// silence. It returns "" once the reply is in.
func (t *taskRun) awaitReply(ctx workflow.Context, role amp.Role, again decision.Option, replied func() bool, here phase) (phase, error) {
	kinds := []decision.Kind{task.KindHeartbeatTimeout, task.KindDeliveryFailed}
	ref := t.DispatchID
	if role == amp.RoleReviewer {
		ref = t.RequestID
	}
	for {
		if replied() {
			t.supersede(ctx, "the "+string(role)+" replied", kinds...)
			t.clearFailed()
			return "", nil
		}
		if t.mustGiveWay(ctx) {
			return here, nil
		}
		if o := t.decisions.Take(kinds...); o != nil {
			t.clearFailed()
			switch o.Option {
			case task.OptWait:
				t.LastActive = workflow.Now(ctx)
				continue
			case task.OptRedispatch:
				return phaseDispatch, nil
			case task.OptReviewAgain:
				return phaseReview, nil
			}
			return t.terminatedBy(o), nil
		}
		if f := t.failedToRaise(ref); f != nil {
			if err := t.raiseFailed(ctx, f, again); err != nil {
				return here, err
			}
			continue
		}
		k, open := t.decisions.Asking(kinds...)
		var deadline time.Time
		if !open {
			deadline = t.LastActive.Add(t.In.Policy.HeartbeatTimeout)
		}
		last := t.LastActive
		timedOut, err := t.waitFor(ctx, deadline, func() bool {
			return replied() || t.decisions.Answered(kinds...) || t.LastActive != last || t.failedToRaise(ref) != nil
		})
		if err != nil {
			return here, err
		}
		if t.failedToRaise(ref) != nil {
			continue
		}
		// A heartbeat answers the silence, not the failed delivery.
		if open && k == task.KindHeartbeatTimeout && t.LastActive != last {
			t.supersede(ctx, "the "+string(role)+" showed life again", kinds...)
			continue
		}
		if timedOut && !open {
			desc := fmt.Sprintf("The %s has been silent for %s (no message or heartbeat).", role, task.FormatDuration(t.In.Policy.HeartbeatTimeout))
			esc := t.escalate(ctx, amp.EscHeartbeatTimeout, amp.SeverityWarning, amp.RoleSystem, desc, []string{ref},
				"Send the work again", "Keep waiting", "Terminate the task")
			t.withdrawDecision(ctx, "superseded by a heartbeat timeout")
			if err := t.ask(ctx, task.KindHeartbeatTimeout, desc+" Send again, keep waiting or terminate?", esc, again, optWait, optTerminate); err != nil {
				return here, err
			}
		}
	}
}

// takeResult ACKs the executor's result and checks it against git.
func (t *taskRun) takeResult(ctx workflow.Context) (phase, error) {
	res := t.Result
	t.ackFor(ctx, *res)
	r := res.Result()
	t.ResultCommit = r.CommitHash // until git names it in full
	// Entered again with a question open: go back to it, check nothing twice.
	if k, ok := t.decisions.Asking(task.KindPartialResult, task.KindResultProblem); ok {
		return t.resultDecision(ctx, k, t.pendingPrompt(), nil)
	}
	if _, ok := t.decisions.Asking(task.KindBranchViolation); ok {
		return t.branchViolation(ctx, t.pendingPrompt())
	}
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
	in := activities.CheckResultInput{
		TaskID: t.In.TaskID, MsgID: res.MsgID, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch,
		Commit: r.CommitHash, Claimed: r.DiffSummary, DefaultBranch: t.Default, GitHubRepo: t.GitHubRepo,
	}
	yielded, err := t.activity(ctx, func(ctx workflow.Context) workflow.Future {
		return t.gitCheck(ctx, acts.CheckResult, in)
	}, &out)
	if yielded {
		return phaseResult, nil
	}
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
		return t.branchViolation(ctx, fmt.Sprintf("Branch violation on %s: %s", res.MsgID, out.Violation))
	}
	t.DiffURL, t.Mismatches = out.DiffURL, out.Mismatches
	if out.Commit != "" {
		t.ResultCommit = out.Commit
	}
	if len(out.Mismatches) > 0 {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "check", MsgID: res.MsgID, Note: "diff_summary does not match git: " + strings.Join(out.Mismatches, "; ")})
	}
	if t.sameCommitAsRejected() {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "check", MsgID: res.MsgID, Note: noNewCommitNote + " (" + shortHash(t.ResultCommit) + ")"})
	}
	return phaseCI, nil
}

// branchViolation suspends the task on a commit outside its branch.
func (t *taskRun) branchViolation(ctx workflow.Context, desc string) (phase, error) {
	res := t.Result
	t.setStatus(ctx, task.StatusSuspended, "branch violation")
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

// pendingPrompt is the open decision's question, for a phase entered again.
func (t *taskRun) pendingPrompt() string {
	if d := t.decisions.Pending(); d != nil {
		return d.Prompt
	}
	return ""
}

// activity runs an activity that may take long, cancelling it when the
// task must give way (a cancel, an agent's critical escalation, a
// continue-as-new); it then reports yielded, and the phase runs again.
func (t *taskRun) activity(ctx workflow.Context, start func(workflow.Context) workflow.Future, out any) (bool, error) {
	actx, cancel := workflow.WithCancel(ctx)
	f := start(actx)
	done := false
	workflow.Go(ctx, func(gctx workflow.Context) {
		if err := workflow.Await(gctx, func() bool { return done || t.mustGiveWay(gctx) }); err == nil && !done {
			cancel()
		}
	})
	err := f.Get(ctx, out)
	done = true
	if err != nil && t.mustGiveWay(ctx) {
		return true, nil
	}
	return false, err
}

// resultDecision asks the admins what to do with a result that cannot
// go on to review as it is.
func (t *taskRun) resultDecision(ctx workflow.Context, kind decision.Kind, desc string, esc *amp.Message) (phase, error) {
	res := t.Result
	o, err := t.decideOn(ctx, kind, desc+" Redispatch with a note, accept as is, or terminate?", esc,
		decision.Option{ID: task.OptRedispatch, Label: "Redispatch with a note", NoteRequired: true}, optAccept, optTerminate)
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
	t.record(ctx, a.MsgID, activities.KindAck, a)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "ack", MsgID: a.MsgID, From: string(amp.RoleCoordinator), Note: "ack of " + m.MsgID})
	t.snapshot()
}
