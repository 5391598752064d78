package aof

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
	"github.com/ampflow/ampflow/workflows/decide"
)

// What an agent review takes from the reviewer and its admins: the
// reviewer's ACK, verdict or escalation, and a cancel.

// validateSubmit takes the reviewer's ACK of the review_request, its
// review_verdict and its escalation, signed as workflows.Client.Submit
// signs them; it refuses anything else before it enters history. The
// signature is checked here (decide.ValidateSigned), not in a local
// activity in the handler: a handler that waited for one would let a
// second submission under the same msg_id overtake the first.
func (r *agentReview) validateSubmit(ctx workflow.Context, in task.SubmitInput) error {
	_, dup, err := r.classify(in)
	if err != nil || dup {
		return err
	}
	a, err := in.SignedAs()
	if err != nil {
		return refusal.New(task.CodeInvalid, "reading the command: %v", err)
	}
	return decide.ValidateSigned(ctx, r.in.ID, a)
}

// classify decides whether rec is acceptable now and whether it repeats
// one taken (dup); it reads the state and never changes it.
func (r *agentReview) classify(in task.SubmitInput) (rec amp.Record, dup bool, err error) {
	rec, err = amp.ParseRecord(in.Raw)
	if err != nil {
		return rec, false, refusal.Record(err)
	}
	taskID, from := "", amp.Role("")
	if rec.Ack != nil {
		taskID, from = rec.Ack.TaskID, rec.Ack.From
	} else {
		taskID, from = rec.Message.TaskID, rec.Message.From
	}
	if taskID != r.in.ID {
		return rec, false, refusal.Field("task_id", "%s is not this review (%s)", taskID, r.in.ID)
	}
	if prev, ok := r.seen[rec.ID()]; ok {
		if prev != workflows.SubmitUpdateID(rec) {
			return rec, false, refusal.New(task.CodeConflict, "msg_id: %s was already used by a different message", rec.ID())
		}
		return rec, true, nil
	}
	if r.finished() {
		return rec, false, refusal.New(task.CodeFinished, "the review %s has ended: it takes no more messages", r.in.ID)
	}
	if from != amp.RoleReviewer {
		return rec, false, refusal.Field("from", "is %s: the review of an AOF task takes messages from the reviewer only", from)
	}
	switch {
	case rec.Ack != nil && rec.Ack.AckOf != r.request.MsgID:
		return rec, false, refusal.Field("ack_of", "%s is not this review's review_request (%s)", rec.Ack.AckOf, r.request.MsgID)
	case rec.Ack != nil:
		// Another ACK of the request (a retried POST /v1/acks makes a new
		// msg_id each time) is the first one again.
		return rec, r.ackID != "", nil
	case rec.Message.Type != amp.TypeReviewVerdict && rec.Message.Type != amp.TypeEscalation:
		return rec, false, refusal.New(task.CodeUnexpected, "unexpected %s: the review %s takes an ACK of %s, then a review_verdict or an escalation",
			rec.Message.Type, r.in.ID, r.request.MsgID)
	}
	return rec, false, nil
}

// submit keeps a record the validator let through and answers once it is
// saved.
func (r *agentReview) submit(ctx workflow.Context, in task.SubmitInput) (task.SubmitResult, error) {
	// Judged again: an earlier update's handler may have moved the state
	// since this one's validator ran.
	rec, dup, err := r.classify(in)
	if err != nil {
		return task.SubmitResult{}, err
	}
	out := task.SubmitResult{MsgID: rec.ID(), Status: task.StatusInReview}
	if r.finished() {
		out.Status = task.StatusDone
	}
	if dup {
		if rec.Ack != nil {
			out.MsgID = r.ackID
		}
		out.Duplicate = true
		return out, nil
	}
	r.seen[rec.ID()] = workflows.SubmitUpdateID(rec)
	now := workflow.Now(ctx).UTC()
	switch {
	case rec.Ack != nil:
		r.record(ctx, rec.ID(), ssot.KindAck, in.Raw)
		r.ackID, r.active = rec.ID(), now
	case rec.Message.Type == amp.TypeReviewVerdict:
		m := *rec.Message
		r.record(ctx, m.MsgID, ssot.KindMessage, in.Raw)
		r.ackVerdict(ctx, m)
		r.verdict = &m
	default:
		m := *rec.Message
		r.record(ctx, m.MsgID, ssot.KindMessage, in.Raw)
		e := m.Escalation()
		r.stopped = fmt.Sprintf("the reviewer agent escalated (%s, %s): %s", e.EscalationType, e.Severity, e.Description)
	}
	if r.finished() {
		out.Status = task.StatusDone
	}
	if err := r.awaitSaved(ctx); err != nil {
		return task.SubmitResult{}, err
	}
	return out, nil
}

// ackVerdict records the coordinator's ACK of the verdict, under a msg_id
// no record of the review has.
func (r *agentReview) ackVerdict(ctx workflow.Context, m amp.Message) {
	at := workflow.Now(ctx).UTC()
	ack := amp.NewAck(amp.RoleCoordinator, m, at)
	for _, taken := r.seen[ack.MsgID]; taken; _, taken = r.seen[ack.MsgID] {
		at = at.Add(time.Millisecond)
		ack = amp.NewAck(amp.RoleCoordinator, m, at)
	}
	r.seen[ack.MsgID] = ""
	b, _ := json.Marshal(ack)
	r.record(ctx, ack.MsgID, ssot.KindAck, b)
}

func (r *agentReview) validateCancel(in task.CancelInput) error {
	if r.finished() {
		return refusal.New(task.CodeFinished, "the review %s has ended", r.in.ID)
	}
	if strings.TrimSpace(in.By) == "" {
		return refusal.Field("by", "is required: who cancels the review")
	}
	return nil
}

// cancel ends the review without a verdict: the admins review instead.
func (r *agentReview) cancel(ctx workflow.Context, in task.CancelInput) (task.ChangeResult, error) {
	if err := r.validateCancel(in); err != nil {
		return task.ChangeResult{}, err
	}
	if err := r.verify(ctx, in.SignedAs); err != nil {
		return task.ChangeResult{}, err
	}
	if err := r.validateCancel(in); err != nil {
		return task.ChangeResult{}, err
	}
	r.stopped = "the review was cancelled by " + in.By
	if in.Reason != "" {
		r.stopped += ": " + in.Reason
	}
	r.events++
	b, _ := json.Marshal(map[string]any{"event": "cancel", "by": in.By, "reason": in.Reason})
	r.record(ctx, fmt.Sprintf("event-%s-%d", r.in.ID, r.events), ssot.KindEvent, b)
	// It answers once the review has ended and left the inbox.
	if err := workflow.Await(ctx, func() bool { return r.closed }); err != nil {
		return task.ChangeResult{}, err
	}
	if err := r.awaitSaved(ctx); err != nil {
		return task.ChangeResult{}, err
	}
	return task.ChangeResult{Status: task.StatusDone}, nil
}

// verify refuses, with forbidden, a submission or cancel no channel
// holding the decision key signed (a raw Temporal update): the check and
// record of decide.VerifySigned. Nothing changes.
func (r *agentReview) verify(ctx workflow.Context, signedAs func() (decision.Answer, error)) error {
	a, err := signedAs()
	if err != nil {
		return refusal.New(task.CodeInvalid, "reading the command: %v", err)
	}
	return decide.VerifySigned(ctx, r.in.ID, a)
}
