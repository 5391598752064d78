package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

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
	if t.Lease == nil {
		// No dispatch without the branch: a lease lost since is taken again.
		return phaseLease, nil
	}
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, t.In.TaskID, t.newTime(ctx, amp.TypeTaskDispatch), t.dispatchPayload())
	sec := int(t.In.Policy.AckTimeout(amp.TypeTaskDispatch) / time.Second)
	m.AckTimeoutSec = &sec
	m.ContextRef = t.FixRefs
	t.dropOutboxTo(amp.RoleExecutor)
	t.handOn(amp.RoleExecutor)
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

// takeResult ACKs the executor's result and checks it against git.
func (t *taskRun) takeResult(ctx workflow.Context) (phase, error) {
	res := t.Result
	t.ackFor(ctx, *res)
	r := res.Result()
	t.ResultCommit = r.CommitHash // until git names it in full
	// Entered again with a question asked: go back to it, check nothing twice.
	if k, asked := t.decisions.Asking(task.KindPartialResult, task.KindResultProblem); asked {
		return t.resultDecision(ctx, k, "", nil)
	}
	if _, asked := t.decisions.Asking(task.KindBranchViolation); asked {
		return t.branchViolation(ctx, "")
	}
	if r.CompletionStatus != amp.StatusComplete {
		t.setStatus(ctx, task.StatusAwaitingAdmin, string(r.CompletionStatus)+" result")
		desc := fmt.Sprintf("The executor reported %s on %s: %s", r.CompletionStatus, r.SubtaskID, strings.Join(r.Blockers, "; "))
		esc := func() *amp.Message {
			return t.escalate(ctx, amp.EscUnknown, amp.SeverityWarning, amp.RoleCoordinator, desc, []string{res.MsgID},
				"Redispatch with a note", "Accept the result as is", "Terminate the task")
		}
		return t.resultDecision(ctx, task.KindPartialResult, desc, esc)
	}
	var out activities.CheckResultOutput
	in := activities.CheckResultInput{
		TaskID: t.In.TaskID, MsgID: res.MsgID, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch,
		Commit: r.CommitHash, Claimed: r.DiffSummary, DefaultBranch: t.Default, GitHubRepo: t.GitHubRepo, Base: t.Base,
	}
	gaveWay, err := t.runUntilGiveWay(ctx, func(ctx workflow.Context) workflow.Future {
		return t.gitCheck(ctx, acts.CheckResult, in)
	}, &out)
	if gaveWay {
		return phaseResult, nil
	}
	if err != nil {
		t.LastError = "checking the result against git: " + errMessage(err)
		t.setStatus(ctx, task.StatusAwaitingAdmin, "result not in git")
		desc := fmt.Sprintf("The result %s cannot be checked against git: %s", res.MsgID, errMessage(err))
		esc := func() *amp.Message {
			return t.escalate(ctx, amp.EscConflict, amp.SeverityWarning, amp.RoleCoordinator, desc, []string{res.MsgID},
				"Redispatch with a note", "Accept the result as is", "Terminate the task")
		}
		return t.resultDecision(ctx, task.KindResultProblem, desc, esc)
	}
	if out.Violation != "" {
		t.setStatus(ctx, task.StatusSuspended, "branch violation")
		if out.NoCommit {
			return t.branchViolation(ctx, fmt.Sprintf("No commit in %s: %s.", res.MsgID, out.Violation))
		}
		return t.branchViolation(ctx, fmt.Sprintf("Branch violation on %s: %s", res.MsgID, out.Violation))
	}
	t.DiffURL, t.Mismatches, t.CheckedResult = out.DiffURL, out.Mismatches, res.MsgID
	if out.Commit != "" {
		t.ResultCommit = out.Commit
	}
	if len(out.Mismatches) > 0 {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "check", MsgID: res.MsgID, Note: "diff_summary does not match git: " + strings.Join(out.Mismatches, "; ")})
	}
	if t.sameCommitAsRejected() {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "check", MsgID: res.MsgID, Note: noNewCommitNote + " (" + shortHash(t.ResultCommit) + ")"})
	}
	return t.afterResult(), nil
}

// branchViolation suspends the task on a commit outside its branch.
func (t *taskRun) branchViolation(ctx workflow.Context, desc string) (phase, error) {
	res := t.Result
	t.setStatus(ctx, task.StatusSuspended, "branch violation")
	esc := func() *amp.Message {
		return t.escalate(ctx, amp.EscBranchViolation, amp.SeverityCritical, amp.RoleCoordinator, desc, []string{t.DispatchID, res.MsgID},
			"Redispatch with guidance to work on "+t.In.Plan.Branch, "Terminate the task")
	}
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

// resultDecision asks the admins what to do with a result that cannot
// go on to review as it is.
func (t *taskRun) resultDecision(ctx workflow.Context, kind decision.Kind, desc string, esc func() *amp.Message) (phase, error) {
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
