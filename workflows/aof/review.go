package aof

import (
	"encoding/json"
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// KindReview is the admins' review of a task in review.
const KindReview decision.Kind = "aof_review"

// Review options: approve → done, send back → ready with a note, block.
const (
	OptSendBack = "send_back"
	OptBlock    = "block"
)

var reviewOptions = []decision.Option{
	{ID: decision.OptApprove, Label: "Approve: done"},
	{ID: OptSendBack, Label: "Send back to ready", NoteRequired: true},
	{ID: OptBlock, Label: "Block", NoteRequired: true},
}

// review keeps the admins' review in step with the task: a task in
// review has one open review decision; an answer moves the task; a task
// that left review otherwise withdraws it.
func (r *aofRun) review(ctx workflow.Context) {
	if o := r.decisions.Take(KindReview); o != nil {
		r.touch(ctx)
		r.applyReview(ctx, *o)
		return
	}
	if v := r.agentDone; v != nil {
		r.agentDone = nil
		r.touch(ctx)
		r.applyAgentVerdict(ctx, *v)
		return
	}
	open := r.decisions.PendingOf(KindReview)
	agent := r.Reviewer != nil && r.AgentReview.Fallback == ""
	switch {
	case r.Task.Status == StatusReview && agent && r.Policy == nil:
		// The reviewer's deadlines are the worker's policy: wait for it.
	case r.Task.Status == StatusReview && agent && !r.AgentReview.Running && open == nil:
		r.touch(ctx)
		r.startAgentReview(ctx)
	case r.Task.Status == StatusReview && open == nil && !r.AgentReview.Running:
		r.touch(ctx)
		_, err := r.decisions.Raise(ctx, decide.Request{
			Kind:     KindReview,
			Prompt:   r.reviewPrompt(),
			Options:  reviewOptions,
			Context:  r.reviewContext(),
			Approves: r.underReview(),
			OnExpiry: OptBlock,
		})
		if err != nil {
			workflow.GetLogger(ctx).Error("raising the review of an AOF task", "task", r.Task.TaskID, "error", err)
		}
	case r.Task.Status != StatusReview && open != nil:
		r.touch(ctx)
		r.decisions.Withdraw(ctx, "the task left review: it is "+string(r.Task.Status))
	}
	if r.Task.Status != StatusReview && (r.AgentReview.Running || r.AgentReview.Fallback != "") {
		r.touch(ctx)
		r.endAgentReview()
	}
}

func (r *aofRun) applyReview(ctx workflow.Context, o decision.Outcome) {
	reason := o.Option + " by " + o.By
	if o.Note != "" {
		reason += ": " + o.Note
	}
	switch o.Option {
	case decision.OptApprove:
		r.transition(ctx, StatusDone, o.By, reason)
	case OptSendBack:
		r.appendWorkLog(WorkLogLine(o.At, "", "sent back by "+o.By+": "+o.Note, nil))
		r.transition(ctx, StatusReady, o.By, reason)
	case OptBlock:
		r.transition(ctx, StatusBlocked, o.By, reason)
	}
}

func (r *aofRun) reviewPrompt() string {
	p := fmt.Sprintf("Review AOF task %s: %s", r.Task.TaskID, r.Task.Title)
	if res := r.Task.Result; res != nil {
		p += fmt.Sprintf(" (outcome %s by %s, tests %d/%d passed): %s", res.Outcome, res.AgentID, res.Tests.Passed, res.Tests.Total, res.Notes)
	}
	return p
}

// reviewContext is what the admins see of the task: its title as the
// summary and, as facts, the task, its agent and its run result.
func (r *aofRun) reviewContext() decision.Context {
	c := decision.Context{Description: r.Task.Title, Extra: map[string]any{"aof_task_id": r.Task.TaskID}}
	if r.Task.Assignee != "" {
		c.Extra["assignee"] = r.Task.Assignee
	}
	if r.Task.ParentTaskID != "" {
		c.Extra["parent_task_id"] = r.Task.ParentTaskID
	}
	if res := r.Task.Result; res != nil {
		// The blockers once, as the context's own (not again in Extra):
		// the decision is carried in every save while it is open.
		c.Blockers = res.Blockers
		c.Extra["outcome"] = fmt.Sprintf("%s by %s", res.Outcome, res.AgentID)
		c.Extra["tests"] = fmt.Sprintf("%d/%d passed, %d failed", res.Tests.Passed, res.Tests.Total, res.Tests.Failed)
		c.Extra["summary_ref"] = res.SummaryRef
		if len(res.Deliverables) > 0 {
			c.Extra["deliverables"] = res.Deliverables
		}
		if res.Notes != "" {
			c.Extra["notes"] = res.Notes
		}
	}
	if n := len(r.Task.WorkLog); n > 0 {
		c.Extra["work_log"] = r.Task.WorkLog[n-1]
	}
	if f := r.AgentReview.Fallback; f != "" {
		c.Extra["reviewer_agent"] = f
		c.AgentStderr = r.AgentReview.Stderr
	}
	return c
}

// underReview is what an approval approves: the task and its run result.
func (r *aofRun) underReview() any {
	return struct {
		TaskID string     `json:"taskId"`
		Title  string     `json:"title"`
		Result *RunResult `json:"result"`
	}{r.Task.TaskID, r.Task.Title, r.Task.Result}
}

func (r *aofRun) validateDecide(in decision.Answer) error {
	if r.Task.Status == StatusDone {
		return r.refuseEnded()
	}
	_, err := r.decisions.Check(in)
	return err
}

// decide takes an admin's answer and returns once the task has moved.
func (r *aofRun) decide(ctx workflow.Context, in decision.Answer) (task.DecideResult, error) {
	if err := r.validateDecide(in); err != nil {
		return task.DecideResult{}, err
	}
	rep, err := r.decisions.Answer(ctx, in)
	if err != nil {
		return task.DecideResult{}, err
	}
	if rep.Outcome == nil {
		p := rep.Open.Progress()
		return task.DecideResult{Status: task.Status(r.Task.Status), Decision: rep.Open, Progress: &p, Note: rep.Note}, nil
	}
	if err := workflow.Await(ctx, func() bool { return !r.decisions.Answered(KindReview) }); err != nil {
		return task.DecideResult{}, err
	}
	if err := r.awaitSaved(ctx); err != nil {
		return task.DecideResult{}, err
	}
	return task.DecideResult{Outcome: *rep.Outcome, Status: task.Status(r.Task.Status)}, nil
}

// host is the task's side of the decision engine: records are logged as
// events, steps go to the admins.
type host struct{ r *aofRun }

func (h host) Record(ctx workflow.Context, id string, body any) {
	typ := EventReviewRequested
	switch body.(type) {
	case decision.Outcome:
		typ = EventReviewDecided
	case decide.ApprovalRecord:
		typ = "review.approval"
	}
	var payload map[string]any
	b, _ := json.Marshal(body)
	_ = json.Unmarshal(b, &payload)
	h.r.records = append(h.r.records, activities.RecordEntry{ID: id, Kind: ssot.KindDecision, Body: b, RecordedAt: workflow.Now(ctx).UTC()})
	payload["decisionId"] = id
	h.r.event(ctx, typ, decision.By, payload)
}

var noticeOf = map[decide.Event]notify.Event{
	decide.EventOpened:    notify.DecisionOpened,
	decide.EventProgress:  notify.DecisionProgress,
	decide.EventReminded:  notify.DecisionReminder,
	decide.EventEscalated: notify.DecisionEscalated,
	decide.EventClosed:    notify.DecisionClosed,
}

func (h host) Notify(ctx workflow.Context, ev decide.Event, d decision.Decision, o *decision.Outcome) {
	h.r.notices = append(h.r.notices, notify.Input{TaskID: h.r.subject, Event: noticeOf[ev],
		Status: task.Status(h.r.Task.Status), Decision: &d, Outcome: o})
	// A new Rev, so the decision as it stands now (reminded, escalated,
	// closed) replaces the listed one.
	h.r.touch(ctx)
}

func (h host) MayDecide(by string, escalated bool) bool {
	return h.r.Policy != nil && h.r.Policy.MayDecide(by, escalated)
}
