package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

func (t *taskRun) validateDecide(in decision.Answer) error {
	_, err := t.checkAnswer(in)
	return err
}

// checkAnswer is the engine's check of an answer plus the task's own:
// nothing is decided on an ended task, and a replan comes with subtasks.
func (t *taskRun) checkAnswer(in decision.Answer) (decision.Option, error) {
	if t.Status.Terminal() {
		return decision.Option{}, refusal.New(task.CodeFinished, "task %s is %s", t.In.TaskID, t.Status)
	}
	opt, err := t.decisions.Check(in)
	if err != nil {
		return opt, err
	}
	if opt.ID == task.OptReplan {
		return decision.Option{}, refusal.Field("option", "replan needs new subtasks: use `ampflow task replan %s -f FILE` or POST /v1/tasks/%s/replan", t.In.TaskID, t.In.TaskID)
	}
	return opt, nil
}

// decide takes an admin's answer. An approval short of the quorum returns
// the decision still open with its approvals; an answer that closes it
// returns once the run loop has acted on it, with the task's new status.
func (t *taskRun) decide(ctx workflow.Context, in decision.Answer) (task.DecideResult, error) {
	if _, err := t.checkAnswer(in); err != nil {
		return task.DecideResult{}, err
	}
	r, err := t.decisions.Answer(ctx, in)
	if err != nil {
		return task.DecideResult{}, err
	}
	if r.Outcome == nil {
		p := r.Open.Progress()
		return task.DecideResult{Status: t.Status, Decision: r.Open, Progress: &p, Note: r.Note}, nil
	}
	if err := t.awaitAnswerTaken(ctx); err != nil {
		return task.DecideResult{}, err
	}
	return task.DecideResult{Outcome: *r.Outcome, Status: t.Status}, nil
}

// awaitAnswerTaken waits until the run loop has taken the answer, so an
// update returns the status it led to.
func (t *taskRun) awaitAnswerTaken(ctx workflow.Context) error {
	return workflow.Await(ctx, func() bool {
		_, waiting := t.decisions.AnsweredKind()
		return !waiting || t.ending
	})
}

func (t *taskRun) validateCancel(in task.CancelInput) error {
	if strings.TrimSpace(in.Reason) == "" {
		return refusal.Field("reason", "required")
	}
	if strings.TrimSpace(in.By) == "" {
		return refusal.Field("by", "required")
	}
	if t.Status.Terminal() {
		return refusal.New(task.CodeFinished, "task %s is already %s", t.In.TaskID, t.Status)
	}
	return nil
}

func (t *taskRun) cancel(ctx workflow.Context, in task.CancelInput) (task.ChangeResult, error) {
	if err := t.validateCancel(in); err != nil {
		return task.ChangeResult{}, err
	}
	if err := t.verifyCommand(ctx, in.SignedAs); err != nil {
		return task.ChangeResult{}, err
	}
	if t.Cancel == nil {
		t.Cancel = &in
		t.record(ctx, fmt.Sprintf("cancel-%s-%d", t.In.TaskID, workflow.Now(ctx).UnixMilli()), ssot.KindEvent, in)
	}
	if err := workflow.Await(ctx, func() bool { return t.Status.Terminal() || t.ending }); err != nil {
		return task.ChangeResult{}, err
	}
	return task.ChangeResult{Status: t.Status}, nil
}

func (t *taskRun) validateReplan(in task.ReplanInput) error {
	if strings.TrimSpace(in.By) == "" {
		return refusal.Field("by", "required")
	}
	if len(in.Subtasks) == 0 {
		return refusal.Field("subtasks", "must not be empty")
	}
	var problems []amp.FieldError
	seen := map[string]bool{}
	for i, st := range in.Subtasks {
		switch {
		case strings.TrimSpace(st.SubtaskID) == "":
			problems = append(problems, amp.FieldError{Path: fmt.Sprintf("subtasks[%d].subtask_id", i), Problem: "required"})
		case seen[st.SubtaskID]:
			problems = append(problems, amp.FieldError{Path: fmt.Sprintf("subtasks[%d].subtask_id", i), Problem: fmt.Sprintf("%s appears twice", st.SubtaskID)})
		}
		seen[st.SubtaskID] = true
		if strings.TrimSpace(st.Description) == "" {
			problems = append(problems, amp.FieldError{Path: fmt.Sprintf("subtasks[%d].description", i), Problem: "required"})
		}
		if st.EstimatedLines < 0 {
			problems = append(problems, amp.FieldError{Path: fmt.Sprintf("subtasks[%d].estimated_lines", i), Problem: "must be ≥ 0"})
		}
	}
	if len(problems) > 0 {
		return refusal.Fields(problems, "%s", refusal.Lines(problems))
	}
	switch {
	case t.Status == task.StatusLocked && t.decisions.PendingOf(task.KindHallucinationLock) != nil:
		d := t.decisions.PendingOf(task.KindHallucinationLock)
		if !t.In.Policy.MayDecide(in.By, !d.EscalatedAt.IsZero()) {
			return refusal.New(task.CodeForbidden, "by: %q is not a configured admin; only an admin opens the hallucination lock", in.By)
		}
	case t.Phase == phaseApproval && t.decisions.PendingOf(task.KindPlanApproval) != nil:
	default:
		return refusal.New(task.CodeUnexpected, "task %s is %s: replan is taken while locked or awaiting plan approval", t.In.TaskID, t.Status)
	}
	return nil
}

func (t *taskRun) replan(ctx workflow.Context, in task.ReplanInput) (task.ChangeResult, error) {
	if err := t.validateReplan(in); err != nil {
		return task.ChangeResult{}, err
	}
	if err := t.verifyCommand(ctx, in.SignedAs); err != nil {
		return task.ChangeResult{}, err
	}
	t.record(ctx, fmt.Sprintf("replan-%s-%d", t.In.TaskID, workflow.Now(ctx).UnixMilli()), ssot.KindEvent, in)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "replan", From: in.By, Note: fmt.Sprintf("%d new subtasks", len(in.Subtasks))})
	if t.Phase == phaseApproval {
		// The admins are asked again, about the new plan.
		t.Plan = append(t.Plan[:t.Index:t.Index], in.Subtasks...)
		t.decisions.Settle(ctx, task.OptReplan, in.Note, in.By, "replan")
		if err := t.awaitAnswerTaken(ctx); err != nil {
			return task.ChangeResult{}, err
		}
		return task.ChangeResult{Status: t.Status}, nil
	}
	t.Replan = &in
	t.decisions.Settle(ctx, task.OptReplan, in.Note, in.By, "replan")
	if err := t.awaitAnswerTaken(ctx); err != nil {
		return task.ChangeResult{}, err
	}
	return task.ChangeResult{Status: t.Status}, nil
}

// verifyCommand refuses, with forbidden, a cancel or replan that no
// channel holding the decision key signed (a raw Temporal update naming
// someone): the engine's check of answers, in a local activity that also
// records the refusal. Nothing changes.
func (t *taskRun) verifyCommand(ctx workflow.Context, signedAs func() (decision.Answer, error)) error {
	a, err := signedAs()
	if err != nil {
		return refusal.New(task.CodeInvalid, "reading the command: %v", err)
	}
	return t.decisions.Verify(ctx, a)
}

// agentEscalation takes an agent's escalation: admins hear of it, and a
// critical one suspends the task (an open question is withdrawn, to be
// asked again after a resume) unless it is suspended already.
func (t *taskRun) agentEscalation(ctx workflow.Context, m amp.Message) {
	critical := m.Escalation().Severity == amp.SeverityCritical
	if critical && !t.suspended() && t.Interrupt == nil {
		t.Interrupt = &m
		return
	}
	t.notify(notify.Escalation, queuedNotice{Status: t.Status, Message: &m})
}

// suspendForAgent handles an agent's critical escalation: the task stands
// still until an admin resumes, redispatches or terminates it.
func (t *taskRun) suspendForAgent(ctx workflow.Context) error {
	esc := t.Interrupt
	if t.ResumeStatus == "" {
		t.ResumeStatus, t.ResumePhase, t.SuspendedAt = t.Status, t.Phase, workflow.Now(ctx)
	}
	resumeStatus, resumePhase, suspendedAt := t.ResumeStatus, t.ResumePhase, t.SuspendedAt
	t.setStatus(ctx, task.StatusSuspended, "critical escalation "+esc.MsgID)
	e := esc.Escalation()
	o, err := t.decideOn(ctx, task.KindAgentEscalation,
		fmt.Sprintf("The %s escalated (%s, critical): %s", e.TriggeredBy, e.EscalationType, e.Description),
		func() *amp.Message { return esc }, optResume, optGuide, optTerminate)
	if err != nil || o == nil {
		return err
	}
	t.Interrupt, t.ResumeStatus, t.ResumePhase = nil, "", ""
	switch o.Option {
	case task.OptResume:
		now := workflow.Now(ctx)
		if !t.Deadline.IsZero() {
			t.Deadline = t.Deadline.Add(now.Sub(suspendedAt))
		}
		if !t.CIDeadline.IsZero() {
			t.CIDeadline = t.CIDeadline.Add(now.Sub(suspendedAt))
		}
		t.LastActive = t.LastActive.Add(now.Sub(suspendedAt))
		t.setStatus(ctx, resumeStatus, "resumed by "+o.By)
		t.Phase = resumePhase
	case task.OptRedispatch:
		t.FixNote = "Admin guidance: " + o.Note
		t.FixRefs = []string{esc.MsgID}
		t.Phase = phaseDispatch
	default:
		t.Phase = t.terminatedBy(o)
	}
	return nil
}

// escalate sends an escalation to the admins: a full AMP message,
// recorded like any other.
func (t *taskRun) escalate(ctx workflow.Context, typ amp.EscalationType, sev amp.Severity, by amp.Role, desc string, affected []string, suggested ...string) *amp.Message {
	if affected == nil {
		affected = []string{}
	}
	last := ""
	if n := len(t.MsgIDs); n > 0 {
		last = t.MsgIDs[n-1]
	}
	p := &amp.Escalation{
		EscalationType: typ,
		Severity:       sev,
		TriggeredBy:    by,
		Description:    desc,
		AffectedMsgs:   affected,
		SystemStateSnapshot: map[string]any{
			"task_status":            string(t.Status),
			"reject_count":           t.RejectCount,
			"ci_rounds":              t.CIRounds,
			"last_successful_msg_id": last,
		},
		SuggestedActions: suggested,
		AutoSuspended:    sev == amp.SeverityCritical,
	}
	if st := t.subtask(); st != nil {
		p.SystemStateSnapshot["subtask_id"] = st.SubtaskID
	}
	m := amp.NewMessage(by, amp.RoleAdmin, t.In.TaskID, t.newTime(ctx, amp.TypeEscalation), p)
	t.recordMessage(ctx, m)
	t.snapshot()
	return &m
}
