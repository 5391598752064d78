package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// validateSubmit refuses, before anything enters history, a record that
// fails the protocol or that the task does not expect now, and one whose
// sender (By, Admin) no channel holding the decision key signed. A repeat
// of an accepted record is not checked: it changes nothing.
func (t *taskRun) validateSubmit(ctx workflow.Context, in task.SubmitInput) error {
	rec, err := amp.ParseRecord(in.Raw)
	if err != nil {
		return refusal.Record(err)
	}
	t.validated.raw, t.validated.rec = string(in.Raw), rec
	if err := t.checkBudget(); err != nil {
		return err
	}
	kind, err := t.classify(rec, in)
	if err == nil && kind == subEscalation {
		err = t.checkEscalation(ctx, *rec.Message)
	}
	if err != nil || kind == subDuplicate {
		return err
	}
	a, err := in.SignedAs()
	if err != nil {
		return refusal.New(task.CodeInvalid, "reading the command: %v", err)
	}
	return decide.ValidateSigned(ctx, t.In.TaskID, a)
}

// submission says what an accepted record does.
type submission int

const (
	subDuplicate submission = iota
	subAck
	subResult
	subVerdict
	subEscalation
)

// classify decides whether rec is acceptable now and what it is. It reads
// the state and never changes it.
func (t *taskRun) classify(rec amp.Record, in task.SubmitInput) (submission, error) {
	id, taskID := rec.ID(), ""
	if rec.Ack != nil {
		taskID = rec.Ack.TaskID
	} else {
		taskID = rec.Message.TaskID
	}
	if taskID != t.In.TaskID {
		return 0, refusal.Field("task_id", "%s is not this task (%s)", taskID, t.In.TaskID)
	}
	if prev, ok := t.Seen[id]; ok {
		if prev == recordDigest(rec) {
			return subDuplicate, nil
		}
		return 0, refusal.New(task.CodeConflict, "msg_id: %s was already used by a different message", id)
	}
	if t.Status.Terminal() {
		return 0, refusal.New(task.CodeFinished, "task %s is %s: it takes no more messages", t.In.TaskID, t.Status)
	}
	if rec.Ack != nil {
		return t.classifyAck(*rec.Ack, in)
	}
	m := *rec.Message
	if m.Type == amp.TypeEscalation {
		return subEscalation, nil
	}
	if t.suspended() || t.Interrupt != nil {
		return 0, refusal.New(task.CodeSuspended, "task suspended: %s %s waits for an admin decision; %s refused", t.In.TaskID, t.Status, m.Type)
	}
	switch m.Type {
	case amp.TypeTaskResult:
		if err := t.claimed(amp.RoleExecutor, in.By, in.Admin); err != nil {
			return 0, err
		}
		return t.classifyResult(m)
	case amp.TypeReviewVerdict:
		if err := t.claimed(amp.RoleReviewer, in.By, in.Admin); err != nil {
			return 0, err
		}
		if !t.awaitingVerdict() {
			return 0, refusal.New(task.CodeUnexpected, "unexpected review_verdict: task %s is %s and expects %s", t.In.TaskID, t.Status, t.expecting())
		}
		if stale := t.staleRef(m.ContextRef, amp.TypeReviewRequest, t.RequestID); stale != "" {
			return 0, refusal.New(task.CodeUnexpected, "context_ref: this review_verdict answers %s; the current review request is %s", stale, t.RequestID)
		}
		return subVerdict, nil
	}
	return 0, refusal.New(task.CodeUnexpected, "unexpected %s: ampflow sends %s messages itself; task %s expects %s", m.Type, m.Type, t.In.TaskID, t.expecting())
}

func (t *taskRun) classifyResult(m amp.Message) (submission, error) {
	if !t.awaitingResult() {
		return 0, refusal.New(task.CodeUnexpected, "unexpected task_result: task %s is %s and expects %s", t.In.TaskID, t.Status, t.expecting())
	}
	if stale := t.staleRef(m.ContextRef, amp.TypeTaskDispatch, t.DispatchID); stale != "" {
		return 0, refusal.New(task.CodeUnexpected, "context_ref: this task_result answers %s; the current dispatch is %s", stale, t.DispatchID)
	}
	cur := t.subtask()
	if cur == nil || m.Result().SubtaskID != cur.SubtaskID {
		return 0, refusal.New(task.CodeUnexpected, "payload.subtask_id: %s is not the current subtask; expected a task_result for %s", m.Result().SubtaskID, cur.SubtaskID)
	}
	return subResult, nil
}

func (t *taskRun) classifyAck(a amp.Ack, in task.SubmitInput) (submission, error) {
	if _, done := t.Acked[a.AckOf]; done {
		// The holder's ACK again (after a restart, say) changes nothing;
		// another agent's is refused while the message is held.
		if h := task.HolderOf(t.Holders, a.From); h != nil && h.MsgID == a.AckOf {
			if err := t.claimed(a.From, in.By, in.Admin); err != nil {
				return 0, err
			}
		}
		return subDuplicate, nil
	}
	m, ok := t.inOutbox(a.AckOf)
	if !ok {
		return 0, refusal.New(task.CodeUnexpected, "ack_of: no message %s awaits an ACK; task %s expects %s", a.AckOf, t.In.TaskID, t.expecting())
	}
	if a.From != m.To {
		return 0, refusal.Field("from", "%s cannot ACK a message addressed to %s", a.From, m.To)
	}
	if err := t.claimed(m.To, in.By, in.Admin); err != nil {
		return 0, err
	}
	if t.suspended() || t.Interrupt != nil {
		return 0, refusal.New(task.CodeSuspended, "task suspended: %s %s waits for an admin decision; ACK refused", t.In.TaskID, t.Status)
	}
	return subAck, nil
}

// claimed refuses by's input for role's work when another agent holds it.
func (t *taskRun) claimed(role amp.Role, by string, admin bool) error {
	if e := task.Claimed(t.In.TaskID, task.HolderOf(t.Holders, role), by, admin); e != nil {
		return refusal.New(e.Code, "%s", e.Message)
	}
	return nil
}

// staleRef returns an earlier message of type typ that refs names when it
// does not name the current one: a reply to a superseded dispatch or
// review request.
func (t *taskRun) staleRef(refs []string, typ amp.Type, current string) string {
	if len(refs) == 0 || slices.Contains(refs, current) {
		return ""
	}
	for _, r := range refs {
		if rt, taskID, ok := amp.ParseMsgID(r); ok && rt == typ && taskID == t.In.TaskID {
			if _, ours := t.Seen[r]; ours {
				return r
			}
		}
	}
	return ""
}

// awaitingResult and awaitingVerdict say what the task takes from agents.
// They follow the status, which changes before a message goes out, not
// the run loop's phase, which moves on only once the SSOT has it.
func (t *taskRun) awaitingResult() bool {
	return (t.Status == task.StatusDispatched || t.Status == task.StatusInProgress) && t.DispatchID != "" && t.Result == nil
}

func (t *taskRun) awaitingVerdict() bool {
	return t.Status == task.StatusInReview && t.RequestID != "" && t.Verdict == nil
}

// recordDigest identifies a record by content, whatever its layout: the
// typed form marshals deterministically.
func recordDigest(rec amp.Record) string {
	var b []byte
	if rec.Ack != nil {
		b, _ = json.Marshal(rec.Ack)
	} else {
		b, _ = json.Marshal(rec.Message)
	}
	return digest(b)
}

// expecting says, for error messages, what the task waits for.
func (t *taskRun) expecting() string {
	var want []string
	for _, m := range t.Outbox {
		want = append(want, fmt.Sprintf("an ACK of %s from the %s", m.MsgID, m.To))
	}
	switch {
	case t.suspended():
		want = append(want, "an admin decision")
	case t.awaitingResult():
		if st := t.subtask(); st != nil {
			want = append(want, "a task_result for subtask "+st.SubtaskID)
		}
	case t.awaitingVerdict():
		want = append(want, "a review_verdict")
	}
	if d := t.decisions.Pending(); d != nil {
		want = append(want, "the admin decision "+d.ID)
	}
	if len(want) == 0 {
		return "no agent message right now"
	}
	return strings.Join(want, ", or ")
}

// submit applies an accepted record. Side effects (SSOT, git, CI) follow
// in the run loop; the state changes here, so the next record is judged
// against it.
func (t *taskRun) submit(ctx workflow.Context, in task.SubmitInput) (task.SubmitResult, error) {
	// The validator parsed it just before, unless this is a replay, on
	// which validators do not run.
	rec, err := t.validated.rec, error(nil)
	if t.validated.raw != string(in.Raw) {
		rec, err = amp.ParseRecord(in.Raw)
	}
	t.validated.raw, t.validated.rec = "", amp.Record{}
	if err != nil {
		return task.SubmitResult{}, refusal.Record(err)
	}
	// Who sent it was checked by validateSubmit, just before, against
	// this same state; on replay the history says it was taken.
	kind, err := t.classify(rec, in)
	if err == nil && kind == subEscalation {
		err = t.checkEscalation(ctx, *rec.Message)
	}
	if err != nil {
		return task.SubmitResult{}, err
	}
	t.Submissions++
	res := task.SubmitResult{MsgID: rec.ID(), Status: t.Status}
	if kind == subDuplicate {
		res.Duplicate = true
		return res, nil
	}
	now := workflow.Now(ctx)
	if rec.Ack != nil {
		t.takeAck(ctx, *rec.Ack, in.By)
		res.Status = t.Status
		return res, nil
	}
	m := *rec.Message
	t.recordMessage(ctx, m)
	switch kind {
	case subResult:
		t.acceptImplicitAck(m.From)
		t.claim(amp.RoleExecutor, in.By, t.DispatchID, now, nil)
		t.answered(amp.RoleExecutor)
		t.Result = &m
		t.LastActive = now
		if w := reportWarning(m); w != "" {
			t.addTimeline(ctx, task.TimelineEntry{Kind: task.TimelineWarning, MsgID: m.MsgID, From: string(m.From), Note: w})
		}
	case subVerdict:
		t.acceptImplicitAck(m.From)
		t.claim(amp.RoleReviewer, in.By, t.RequestID, now, nil)
		t.answered(amp.RoleReviewer)
		t.Verdict = &m
		t.LastActive = now
	case subEscalation:
		t.countEscalation(ctx)
		t.agentEscalation(ctx, m)
	}
	t.snapshot()
	if kind == subResult {
		res.Warnings = t.awaitCheck(ctx, &m)
	}
	res.Status = t.Status
	return res, nil
}

// awaitCheck holds the answer to a task_result until the run has checked
// it against git, and returns where its diff_summary differs: what the
// reviewer will be told. The check is a local activity of the workflow
// task the result came in, whose completion carries the answer anyway,
// so the answer is no later for it, and the agent needs no query. It
// returns nil when the run leaves the result unchecked: another result
// replaced it, the task stopped for an admin's decision or ended, or it
// must give way.
func (t *taskRun) awaitCheck(ctx workflow.Context, m *amp.Message) []string {
	err := workflow.Await(ctx, func() bool {
		return t.CheckedResult == m.MsgID || t.Result == nil || t.Result.MsgID != m.MsgID ||
			(t.Status != task.StatusDispatched && t.Status != task.StatusInProgress) || t.mustGiveWay(ctx)
	})
	if err != nil || t.CheckedResult != m.MsgID {
		return nil
	}
	return slices.Clone(t.Mismatches)
}

func (t *taskRun) takeAck(ctx workflow.Context, a amp.Ack, by string) {
	t.Seen[a.MsgID] = recordDigest(amp.Record{Ack: &a})
	t.Acked[a.AckOf] = a.MsgID
	if m, ok := t.inOutbox(a.AckOf); ok {
		t.claim(m.To, by, a.AckOf, workflow.Now(ctx), &m)
	}
	t.dropOutbox(a.AckOf)
	t.LastActive = workflow.Now(ctx)
	t.record(ctx, a.MsgID, ssot.KindAck, a)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "ack", MsgID: a.MsgID, From: string(a.From), Note: "ack of " + a.AckOf})
	t.snapshot()
}

// acceptImplicitAck treats a reply as the ACK its sender did not write.
func (t *taskRun) acceptImplicitAck(from amp.Role) {
	for _, m := range t.Outbox {
		if m.To == from {
			t.Acked[m.MsgID] = ""
		}
	}
	t.dropOutboxTo(from)
}

// awaited is the agent the task waits for now.
func (t *taskRun) awaited() amp.Role {
	if t.Status == task.StatusInReview {
		return amp.RoleReviewer
	}
	return amp.RoleExecutor
}

// waitsFor reports whether the task is waiting for role's ACK or reply.
func (t *taskRun) waitsFor(role amp.Role) bool {
	switch t.Phase {
	case phaseAwaitAck, phaseAwaitResult:
		return role == amp.RoleExecutor
	case phaseAwaitReview:
		return role == amp.RoleReviewer
	}
	return false
}

// heartbeat is an agent's sign of life; it restarts the heartbeat timer
// unless the task is suspended, when timers stand still.
func (t *taskRun) heartbeat(ctx workflow.Context, in task.HeartbeatInput) {
	if t.Status.Terminal() || t.Heartbeats >= maxTaskHeartbeats {
		return
	}
	t.Heartbeats++
	in.Note = boundNote(in.Note)
	if !in.Recovered && in.From != "" && task.Claimed(t.In.TaskID, task.HolderOf(t.Holders, in.From), in.By, in.Admin) != nil {
		return // another agent's work: the client refused it already
	}
	switch {
	case in.Recovering != nil:
		t.startRecovery(ctx, *in.Recovering)
	case in.From != "":
		t.endRecovery(ctx, in.From, fmt.Sprintf("the %s's retried run has started", in.From))
	}
	if !t.suspended() && (in.From == "" || in.From == t.awaited()) {
		t.LastActive = workflow.Now(ctx)
		// Only a wait for the agent's ACK or reply sends again; a
		// recovery at any other time has nothing to send.
		if in.Recovered && in.From != "" && t.waitsFor(in.From) {
			t.Recovered = in.From
		}
	}
	if in.Account && in.Note != "" {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "account", From: string(in.From), Note: in.Note})
		return
	}
	// Consecutive heartbeats share one timeline entry, so a long task's
	// state does not grow with every sign of life.
	if n := len(t.Timeline); n > 0 && t.Timeline[n-1].Kind == "heartbeat" && t.Timeline[n-1].From == string(in.From) {
		t.Timeline[n-1].At, t.Timeline[n-1].Note = workflow.Now(ctx), in.Note
		t.UpdatedAt = t.Timeline[n-1].At
		return
	}
	t.addTimeline(ctx, task.TimelineEntry{Kind: "heartbeat", From: string(in.From), Note: in.Note})
}

func (t *taskRun) acked(msgID string) bool {
	_, ok := t.Acked[msgID]
	return ok
}

// ackFor writes the ACK record ampflow owes for an agent's message.
func (t *taskRun) ackFor(ctx workflow.Context, m amp.Message) {
	if _, done := t.Acked[m.MsgID]; done && t.Acked[m.MsgID] != "" {
		return
	}
	a := amp.NewAck(amp.RoleCoordinator, m, t.newTime(ctx, amp.AckPrefix))
	t.Seen[a.MsgID] = recordDigest(amp.Record{Ack: &a})
	t.Acked[m.MsgID] = a.MsgID
	t.record(ctx, a.MsgID, ssot.KindAck, a)
	t.addTimeline(ctx, task.TimelineEntry{Kind: "ack", MsgID: a.MsgID, From: string(amp.RoleCoordinator), Note: "ack of " + m.MsgID})
	t.snapshot()
}

// reportWarning is the timeline's warning for a task_result that gives no
// acceptance criterion a value (criteria_met all null): the executor's
// report was not read, and the review goes on from git alone. It is ""
// for any other result.
func reportWarning(m amp.Message) string {
	r := m.Result()
	if r == nil || len(r.SelfAssessment.CriteriaMet) == 0 {
		return ""
	}
	for _, c := range r.SelfAssessment.CriteriaMet {
		if c != nil {
			return ""
		}
	}
	why := "no criterion is true or false"
	if n := r.SelfAssessment.Notes; len(n) > 0 {
		why = n[0]
	}
	return fmt.Sprintf("the executor's report was not read (criteria_met all null): %s; its format is in docs/runners.md", why)
}
