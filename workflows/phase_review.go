package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// requestReview packages the round for the reviewer.
func (t *taskRun) requestReview(ctx workflow.Context) (phase, error) {
	scope := amp.ScopeFull
	if t.SubtaskRejects > 0 {
		scope = amp.ScopeIncremental
	}
	var notes []string
	if len(t.Mismatches) > 0 {
		notes = append(notes, "diff_summary does not match git: "+strings.Join(t.Mismatches, "; "))
	}
	if t.sameCommitAsRejected() {
		notes = append(notes, fmt.Sprintf("%s: %s is the commit the reviewer rejected last time.", noNewCommitNote, shortHash(t.ResultCommit)))
	}
	if t.RejectCount >= 2 {
		notes = append(notes, fmt.Sprintf("Lock is approaching: reject_count is %d; the hallucination lock closes after %d rejections.", t.RejectCount, t.In.Policy.MaxRejects))
	}
	diffURL := t.DiffURL
	if diffURL == "" {
		diffURL = fmt.Sprintf("git diff %s...%s (in %s)", t.Default, shortHash(t.Result.Result().CommitHash), t.In.Plan.Repo)
	}
	if t.CI.failed() {
		notes = append(notes, "CI is failing ("+strings.Join(t.CI.Failing, ", ")+"); an admin chose to review without it.")
	}
	p := &amp.ReviewRequest{
		OriginalDispatchRef: t.DispatchID,
		TaskResultRef:       t.Result.MsgID,
		ReviewScope:         scope,
		DiffURL:             diffURL,
		RejectCount:         t.RejectCount,
		CoordinatorNotes:    strings.Join(notes, "\n"),
	}
	if t.CI != nil && !t.CI.failed() {
		p.CIStatus = map[string]any{"state": t.CI.State, "last_updated": workflow.Now(ctx).UTC().Format(time.RFC3339)}
		for name, s := range t.CI.Checks {
			if s != "failed" {
				p.CIStatus[name] = s
			}
		}
	}
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleReviewer, t.In.TaskID, t.newTime(ctx, amp.TypeReviewRequest), p)
	sec := int(t.In.Policy.AckTimeout(amp.TypeReviewRequest) / time.Second)
	m.AckTimeoutSec = &sec
	m.ContextRef = []string{t.DispatchID, t.Result.MsgID}
	if t.LastVerdictID != "" {
		m.ContextRef = append(m.ContextRef, t.LastVerdictID)
	}
	t.dropOutboxTo(amp.RoleReviewer)
	t.handOn(amp.RoleReviewer)
	t.RequestID = m.MsgID
	t.Verdict = nil
	t.setStatus(ctx, task.StatusInReview, "")
	if err := t.send(ctx, m); err != nil {
		return phaseReview, err
	}
	now := workflow.Now(ctx)
	t.LastActive = now
	t.Deadline = now.Add(m.AckTimeout(t.In.Policy.AckTimeout(amp.TypeReviewRequest)))
	return phaseAwaitReview, nil
}

// awaitReview waits for the reviewer's ACK, then its verdict, with the
// same deadlines as the executor's.
func (t *taskRun) awaitReview(ctx workflow.Context) (phase, error) {
	replied := func() bool { return t.Verdict != nil }
	if !t.acked(t.RequestID) {
		next, err := t.awaitAckOf(ctx, ackWait{role: amp.RoleReviewer, msgID: t.RequestID, typ: amp.TypeReviewRequest,
			again: optReviewAgain, reply: replied, policy: "Send again, keep waiting or terminate?"}, phaseAwaitReview)
		if err != nil || next != "" {
			return next, err
		}
	}
	next, err := t.awaitReply(ctx, amp.RoleReviewer, optReviewAgain, replied, phaseAwaitReview)
	if err != nil || next != "" {
		return next, err
	}
	return phaseVerdict, nil
}

// takeVerdict ACKs the verdict and applies it, through the admins when
// the reviewer is not sure enough.
func (t *taskRun) takeVerdict(ctx workflow.Context) (phase, error) {
	vm := t.Verdict
	t.ackFor(ctx, *vm)
	v := vm.Verdict()
	verdict := v.Decision
	note := ""
	if v.Confidence < t.In.Policy.MinConfidence {
		t.setStatus(ctx, task.StatusAwaitingAdmin, "low-confidence verdict")
		desc := fmt.Sprintf("The reviewer's verdict on %s is %s with confidence %.2f (below %.2f).",
			t.Result.Result().SubtaskID, v.Decision, v.Confidence, t.In.Policy.MinConfidence)
		esc := func() *amp.Message {
			return t.escalate(ctx, amp.EscUnknown, amp.SeverityWarning, amp.RoleCoordinator, desc, []string{vm.MsgID},
				"Accept the verdict", "Override it", "Ask for another review")
		}
		o, err := t.decideOn(ctx, task.KindLowConfidence, desc+" Accept it, override, or review again?", esc,
			optAcceptVerd, optOverApprove, optOverReject, optReviewAgain)
		if err != nil || o == nil {
			return phaseVerdict, err
		}
		switch o.Option {
		case decision.OptApprove:
			verdict = amp.DecisionApproved
		case decision.OptReject:
			verdict, note = amp.DecisionRejected, "Admin: "+o.Note
		case task.OptReviewAgain:
			return phaseReview, nil
		case task.OptTerminate:
			// Only the expiry picks it: the admins are not offered it.
			return t.terminatedBy(o), nil
		}
	}
	t.LastVerdictID = vm.MsgID
	if verdict != amp.DecisionRejected {
		return phaseNextSubtask, nil
	}
	t.RejectCount++
	t.SubtaskRejects++
	t.RejectedCommit = t.ResultCommit
	t.upsertAttributes(ctx)
	t.FixNote, t.FixRefs = rejectionNote(v, note), []string{vm.MsgID}
	if t.RejectCount > t.In.Policy.MaxRejects {
		return phaseLock, nil
	}
	return phaseDispatch, nil
}

// noNewCommitNote flags a result on the commit rejected last time.
const noNewCommitNote = "no new commit since the last rejection"

// sameCommitAsRejected reports whether the current result names the
// commit of the last rejected one: the executor changed nothing. Hashes
// may be abbreviated, so one being a prefix of the other is a match.
func (t *taskRun) sameCommitAsRejected() bool {
	a, b := strings.ToLower(t.ResultCommit), strings.ToLower(t.RejectedCommit)
	if len(a) < 7 || len(b) < 7 {
		return false
	}
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// rejectionNote tells the executor what the reviewer found.
func rejectionNote(v *amp.ReviewVerdict, admin string) string {
	var b strings.Builder
	b.WriteString("The reviewer rejected the previous round. Fix these issues:")
	for _, is := range v.Issues {
		b.WriteString("\n- " + IssueLine(is))
	}
	if admin != "" {
		b.WriteString("\n" + admin)
	}
	return b.String()
}

// IssueLine is a reviewer's issue on one line: "[major] file:12 what
// (suggested: fix)".
func IssueLine(is amp.Issue) string {
	s := fmt.Sprintf("[%s] %s:%d %s", is.Severity, is.File, is.Line, is.Description)
	if is.SuggestedFix != "" {
		s += " (suggested: " + is.SuggestedFix + ")"
	}
	return s
}

// lock is the hallucination lock: too many rejections, and only an
// admin can let the task go on.
func (t *taskRun) lock(ctx workflow.Context) (phase, error) {
	t.setStatus(ctx, task.StatusLocked, "hallucination lock")
	refs := []string{t.DispatchID}
	if vm := t.Verdict; vm != nil { // nil after a GitHub review's rejection
		refs = append(refs, vm.MsgID)
	}
	desc := fmt.Sprintf("%s hallucination lock: the reviewer rejected the work %d times (more than %d). The task is suspended until an admin decides.",
		t.In.TaskID, t.RejectCount, t.In.Policy.MaxRejects)
	esc := func() *amp.Message {
		return t.escalate(ctx, amp.EscHallucinationLock, amp.SeverityCritical, amp.RoleCoordinator, desc, refs,
			"Review the diff yourself and redispatch with specific guidance",
			"Split the task into smaller subtasks (replan)",
			"Approve the work as it is",
			"Terminate the task")
	}
	o, err := t.decideOn(ctx, task.KindHallucinationLock, desc, esc, optGuide, optReplan, optApproveAny, optTerminate)
	if err != nil || o == nil {
		return phaseLock, err
	}
	switch o.Option {
	case task.OptRedispatch:
		t.FixNote += "\nAdmin guidance: " + o.Note
		return phaseDispatch, nil
	case task.OptReplan:
		if rp := t.Replan; rp != nil {
			t.Plan = append(t.Plan[:t.Index:t.Index], rp.Subtasks...)
			t.Replan = nil
		}
		t.SubtaskRejects = 0
		t.LastVerdictID, t.RejectedCommit = "", ""
		t.FixNote = noteOr(o.Note, "")
		return phaseDispatch, nil
	case decision.OptApprove:
		return phaseNextSubtask, nil
	}
	return t.terminatedBy(o), nil
}

func noteOr(note, def string) string {
	if note == "" {
		return def
	}
	return "Admin note: " + note
}
