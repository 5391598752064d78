package aof

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// Events of a review by the reviewer agent.
const (
	// EventReviewVerdict is the reviewer agent's verdict, as it came.
	EventReviewVerdict = "review.verdict"
	// EventReviewNoVerdict is an agent review that ended without a
	// verdict to apply: the admins review instead.
	EventReviewNoVerdict = "review.no_verdict"
)

// Outcomes of an agent review besides the verdict's decision.
const (
	OutcomeNoVerdict = "no_verdict"
	OutcomeEnded     = "ended"
)

// actorReviewer is the actor of the reviewer agent's steps.
const actorReviewer = "reviewer"

// defaultReplyTimeout is how long the reviewer may go without a
// heartbeat when the policy sets no heartbeat_timeout.
const defaultReplyTimeout = 30 * time.Minute

// maxFallbackText bounds the reason kept when the admins review instead.
const maxFallbackText = 4 << 10

// startAgentReview starts the next round of the reviewer agent's review
// as a child workflow. The admins review instead when the agent reported
// anything but done (needs_review and partial ask for a human), or the
// task had MaxAgentReviews rounds.
func (r *aofRun) startAgentReview(ctx workflow.Context) {
	why := ""
	switch res := r.Task.Result; {
	case res == nil:
		why = "the task has no completion report for the reviewer agent to review"
	case res.Outcome != OutcomeDone:
		why = fmt.Sprintf("the agent reported %s, which asks for a human review; only a done outcome goes to the reviewer agent", res.Outcome)
	case r.AgentReview.Round >= MaxAgentReviews:
		why = fmt.Sprintf("the task had %d reviews by the reviewer agent, the most there may be", MaxAgentReviews)
	}
	if why != "" {
		// No review of this round: none is named.
		r.AgentReview.AMPTaskID = ""
		r.agentFallback(ctx, "", why, "")
		return
	}
	a := &r.AgentReview
	a.Round++
	id := AgentReviewID(r.Task.TaskID, a.Round)
	a.AMPTaskID, a.Running, a.Outcome = id, true, ""
	in := AgentReviewInput{ID: id, Round: a.Round, Task: r.view(), Reviewer: *r.Reviewer,
		RejectCount: a.Rejections, MaxRejects: r.Policy.MaxRejects, LastVerdict: a.LastVerdict,
		AckTimeout: r.Policy.AckTimeout(amp.TypeReviewRequest), ReplyTimeout: r.Policy.HeartbeatTimeout}
	in.Task.Review, in.Task.AgentReview = nil, nil
	if in.ReplyTimeout <= 0 {
		in.ReplyTimeout = defaultReplyTimeout
	}
	cctx, stop := workflow.WithCancel(ctx)
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// A task that ends first asks its review to end, which clears
		// the reviewer's inbox.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		TypedSearchAttributes: temporal.NewSearchAttributes(task.AttrStatus.ValueSet(string(task.StatusInReview))),
	})
	r.stopAgent = stop
	r.agentsOpen++
	f := workflow.ExecuteChildWorkflow(cctx, AgentReviewType, in)
	r.event(ctx, EventReviewRequested, actorScheduler, map[string]any{"reviewer": "agent", "ampTaskId": id, "round": a.Round})
	workflow.Go(ctx, func(ctx workflow.Context) {
		v := AgentVerdict{ID: id}
		if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			v.NoAnswer = fmt.Sprintf("the review %s could not start: %v", id, err)
		} else if err := f.Get(ctx, &v); err != nil {
			v.NoAnswer = fmt.Sprintf("the review %s ended without a verdict: %v", id, err)
		}
		r.agentsOpen--
		// A review ended because the task left review answers nothing.
		if r.AgentReview.Running && r.AgentReview.AMPTaskID == id {
			r.agentDone = &v
		}
	})
}

// applyAgentVerdict applies how the agent review ended: approved → done;
// rejected → ready, with the issues in the work log. The admins review
// instead when there is no verdict, when it is less sure than the
// policy's min_confidence, or when it is a rejection past max_rejects.
func (r *aofRun) applyAgentVerdict(ctx workflow.Context, v AgentVerdict) {
	a := &r.AgentReview
	a.Running, r.stopAgent = false, nil
	vd := v.Verdict
	if vd == nil {
		r.agentFallback(ctx, v.ID, v.NoAnswer, v.Stderr)
		return
	}
	a.Outcome, a.LastVerdict = string(vd.Decision), v.MsgID
	issues := issueText(vd)
	r.event(ctx, EventReviewVerdict, actorReviewer, map[string]any{"ampTaskId": v.ID, "msgId": v.MsgID,
		"decision": vd.Decision, "confidence": vd.Confidence, "issues": strings.TrimPrefix(issues, "; ")})
	if vd.Decision == amp.DecisionRejected {
		a.Rejections++
	}
	switch max := r.Policy.MaxRejects; {
	case vd.Confidence < r.Policy.MinConfidence:
		r.agentFallback(ctx, v.ID, fmt.Sprintf("the reviewer agent's verdict (%s) has confidence %.2f, below protocol.min_confidence %.2f%s",
			vd.Decision, vd.Confidence, r.Policy.MinConfidence, issues), "")
		return
	case vd.Decision == amp.DecisionRejected && max > 0 && a.Rejections > max:
		r.agentFallback(ctx, v.ID, fmt.Sprintf("the reviewer agent rejected the work %d times, more than protocol.max_rejects (%d)%s",
			a.Rejections, max, issues), "")
		return
	}
	reason := fmt.Sprintf("%s by the reviewer agent (%s)", vd.Decision, v.ID)
	if vd.Decision != amp.DecisionRejected {
		if issues != "" {
			// An approval's minor issues and direct fixes stay with the task.
			r.appendWorkLog(WorkLogLine(workflow.Now(ctx), "", string(vd.Decision)+" by the reviewer agent ("+v.ID+"):"+strings.TrimPrefix(issues, ";"), nil))
		}
		r.transition(ctx, StatusDone, actorReviewer, reason)
		return
	}
	r.appendWorkLog(WorkLogLine(workflow.Now(ctx), "", "sent back by the reviewer agent ("+v.ID+"):"+strings.TrimPrefix(issues, ";"), nil))
	r.transition(ctx, StatusReady, actorReviewer, reason)
}

// agentFallback leaves the review to the admins, saying why.
func (r *aofRun) agentFallback(ctx workflow.Context, id, why, stderr string) {
	if len(why) > maxFallbackText {
		why = why[:maxFallbackText] + "…"
	}
	a := &r.AgentReview
	a.Fallback, a.Stderr, a.Outcome = why, stderr, OutcomeNoVerdict
	r.event(ctx, EventReviewNoVerdict, actorScheduler, map[string]any{"ampTaskId": id, "reason": why})
}

// endAgentReview ends the agent review of a task that left review: a
// running one is cancelled, and the next review is a new round.
func (r *aofRun) endAgentReview() {
	a := &r.AgentReview
	if a.Running {
		a.Outcome = OutcomeEnded
	}
	if r.stopAgent != nil {
		r.stopAgent()
		r.stopAgent = nil
	}
	a.Running, a.Fallback, a.Stderr = false, "", ""
}

// issueText is a verdict's issues and direct fixes, each after "; ".
func issueText(v *amp.ReviewVerdict) string {
	var b strings.Builder
	for _, is := range v.Issues {
		b.WriteString("; " + workflows.IssueLine(is))
	}
	for _, f := range v.DirectFixes {
		fmt.Fprintf(&b, "; fixed by the reviewer: %s (%s, %d lines)", f.File, f.ChangeType, f.DiffLines)
	}
	return b.String()
}

// RegisterAgentReviewOptions registers AgentReviewWorkflow under
// AgentReviewType.
func RegisterAgentReviewOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: AgentReviewType}
}
