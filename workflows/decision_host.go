package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// expiryOptions is what each kind of task decision takes when nobody
// answers within policy.decisions.expire_after. It fails closed: never an
// approval, and never "keep waiting". A plan nobody approved is rejected;
// everything else ends the task, since the task cannot go on without the
// admin's word and a suspension with nobody asked would wait forever.
var expiryOptions = map[decision.Kind]string{
	task.KindPlanApproval:      decision.OptReject,
	task.KindFinalApproval:     task.OptTerminate,
	task.KindAckTimeout:        task.OptTerminate,
	task.KindHeartbeatTimeout:  task.OptTerminate,
	task.KindDeliveryFailed:    task.OptTerminate,
	task.KindPartialResult:     task.OptTerminate,
	task.KindResultProblem:     task.OptTerminate,
	task.KindBranchViolation:   task.OptTerminate,
	task.KindCIExhausted:       task.OptTerminate,
	task.KindLowConfidence:     task.OptTerminate,
	task.KindHallucinationLock: task.OptTerminate,
	task.KindAgentEscalation:   task.OptTerminate,
	task.KindLeaseWait:         task.OptTerminate,
	task.KindMergeQueue:        task.OptTerminate,
}

// expiryOption returns the option a decision of kind expires into.
func expiryOption(kind decision.Kind) string {
	if o, ok := expiryOptions[kind]; ok {
		return o
	}
	return task.OptTerminate
}

// required is the number of distinct admins who must approve a decision
// of kind: policy.quorum by risk for the plan and the final approval, one
// otherwise.
func (t *taskRun) required(kind decision.Kind) int {
	switch kind {
	case task.KindPlanApproval, task.KindFinalApproval:
		return t.In.Policy.Decisions.Quorum.For(t.In.Plan.RiskLevel)
	}
	return 1
}

// approves is exactly what an admin approves in a decision of kind; its
// digest binds the answers, so a plan or a result that changed under the
// question is not approved by an answer to the old one.
//
//   - plan_approval: the plan, as dispatched: the task_dispatch payload
//     with every subtask;
//   - final_approval: the plan and every task_result and review_verdict of
//     the task, by msg_id and content digest;
//   - low_confidence: the verdict under question;
//   - hallucination_lock: the last result and the verdict that locked;
//   - partial_result, result_problem, branch_violation: the result;
//   - every other kind: the escalation message behind it, else the
//     decision's context.
func (t *taskRun) approves(kind decision.Kind, esc *amp.Message, c decision.Context) any {
	switch kind {
	case task.KindPlanApproval:
		return t.planUnderApproval()
	case task.KindFinalApproval:
		return struct {
			Plan     amp.TaskDispatch `json:"plan"`
			Messages []messageRef     `json:"messages"`
		}{t.planUnderApproval(), t.workUnderReview()}
	case task.KindLowConfidence:
		if t.Verdict != nil {
			return t.Verdict
		}
	case task.KindHallucinationLock:
		if t.Verdict != nil || t.Result != nil {
			return []*amp.Message{t.Result, t.Verdict}
		}
	case task.KindPartialResult, task.KindResultProblem, task.KindBranchViolation:
		if t.Result != nil {
			return t.Result
		}
	}
	if esc != nil {
		return esc
	}
	return c
}

func (t *taskRun) planUnderApproval() amp.TaskDispatch {
	p := t.In.Plan
	p.Subtasks = t.Plan
	return p
}

// messageRef names a message by id and content.
type messageRef struct {
	MsgID  string `json:"msg_id"`
	Digest string `json:"digest"`
}

// workUnderReview lists the task's results and verdicts, in order.
func (t *taskRun) workUnderReview() []messageRef {
	out := []messageRef{}
	for _, id := range t.MsgIDs {
		typ, _, ok := amp.ParseMsgID(id)
		if ok && (typ == amp.TypeTaskResult || typ == amp.TypeReviewVerdict) {
			out = append(out, messageRef{MsgID: id, Digest: t.Seen[id]})
		}
	}
	return out
}

// decisionHost is the task's side of the decision engine: records go to
// the task's SSOT queue, steps to its timeline and to the admins.
type decisionHost struct{ t *taskRun }

var noticeOf = map[decide.Event]notify.Event{
	decide.EventOpened:    notify.DecisionOpened,
	decide.EventProgress:  notify.DecisionProgress,
	decide.EventReminded:  notify.DecisionReminder,
	decide.EventEscalated: notify.DecisionEscalated,
	decide.EventClosed:    notify.DecisionClosed,
}

func (h decisionHost) Record(ctx workflow.Context, id string, body any) {
	h.t.record(ctx, id, ssot.KindDecision, body)
}

func (h decisionHost) Notify(ctx workflow.Context, ev decide.Event, d decision.Decision, o *decision.Outcome) {
	t := h.t
	e := task.TimelineEntry{Kind: "decision", MsgID: d.ID, Type: string(d.Kind)}
	switch ev {
	case decide.EventOpened:
		e.Note = d.Prompt
	case decide.EventClosed:
		e.From, e.Note = o.By, o.Option+via(o.Channel)+noteSuffix(o.Note)
	case decide.EventProgress:
		last := d.Approvals[len(d.Approvals)-1]
		e.From, e.Note = last.By, "approve"+via(last.Channel)+": "+d.Progress().String()
	case decide.EventReminded:
		e.Note = "reminder: no answer yet"
	case decide.EventEscalated:
		e.Note = "escalated: the escalation group may decide"
	}
	t.addTimeline(ctx, e)
	t.notify(noticeOf[ev], queuedNotice{Status: t.Status, Decision: &d, Outcome: o})
	t.snapshot()
}

func (h decisionHost) MayDecide(by string, escalated bool) bool {
	return h.t.In.Policy.MayDecide(by, escalated)
}
