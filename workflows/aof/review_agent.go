package aof

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
)

// Events of a review by the reviewer agent.
const (
	// EventReviewVerdict is the reviewer agent's verdict, as it came.
	EventReviewVerdict = "review.verdict"
	// EventReviewNoVerdict is an agent review that ended without one:
	// the admins review instead.
	EventReviewNoVerdict = "review.no_verdict"
)

// actorReviewer is the actor of the reviewer agent's steps.
const actorReviewer = "reviewer"

// defaultReplyTimeout is how long the reviewer may go without a
// heartbeat when the policy sets no heartbeat_timeout.
const defaultReplyTimeout = 30 * time.Minute

// startAgentReview starts the next round of the reviewer agent's review
// as a child workflow; the admins review instead when the task has no
// completion report to show or has had MaxAgentReviews rounds.
func (r *aofRun) startAgentReview(ctx workflow.Context) {
	switch {
	case r.Task.Result == nil:
		r.agentFallback(ctx, "", "the task has no completion report for the reviewer agent to review")
		return
	case r.AgentReview.Round >= MaxAgentReviews:
		r.agentFallback(ctx, "", fmt.Sprintf("the task had %d reviews by the reviewer agent, the most there may be", MaxAgentReviews))
		return
	}
	r.AgentReview.Round++
	id := AgentReviewID(r.Task.TaskID, r.AgentReview.Round)
	r.AgentReview.AMPTaskID, r.AgentReview.Running = id, true
	in := AgentReviewInput{ID: id, Round: r.AgentReview.Round, Task: r.view(), Reviewer: *r.Reviewer,
		AckTimeout: r.Policy.AckTimeout(amp.TypeReviewRequest), ReplyTimeout: r.Policy.HeartbeatTimeout}
	in.Task.Review, in.Task.AgentReview = nil, nil
	if in.ReplyTimeout <= 0 {
		in.ReplyTimeout = defaultReplyTimeout
	}
	cctx, stop := workflow.WithCancel(ctx)
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	})
	r.stopAgent = stop
	f := workflow.ExecuteChildWorkflow(cctx, AgentReviewType, in)
	r.event(ctx, EventReviewRequested, actorScheduler, map[string]any{"reviewer": "agent", "ampTaskId": id, "round": r.AgentReview.Round})
	workflow.Go(ctx, func(ctx workflow.Context) {
		v := AgentVerdict{ID: id}
		if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
			v.NoAnswer = fmt.Sprintf("the review %s could not start: %v", id, err)
		} else if err := f.Get(ctx, &v); err != nil {
			v.NoAnswer = fmt.Sprintf("the review %s ended without a verdict: %v", id, err)
		}
		r.agentDone = &v
	})
}

// applyAgentVerdict applies how the agent review ended: approved → done;
// rejected → ready, with the issues in the work log. A verdict less sure
// than the policy's min_confidence, or none, goes to the admins.
func (r *aofRun) applyAgentVerdict(ctx workflow.Context, v AgentVerdict) {
	r.AgentReview.Running, r.stopAgent = false, nil
	vd := v.Verdict
	if vd == nil {
		r.agentFallback(ctx, v.ID, v.NoAnswer)
		return
	}
	r.event(ctx, EventReviewVerdict, actorReviewer, map[string]any{"ampTaskId": v.ID, "msgId": v.MsgID,
		"decision": vd.Decision, "confidence": vd.Confidence, "issues": len(vd.Issues)})
	if min := r.Policy.MinConfidence; vd.Confidence < min {
		r.agentFallback(ctx, v.ID, fmt.Sprintf("the reviewer agent's verdict (%s) has confidence %.2f, below protocol.min_confidence %.2f", vd.Decision, vd.Confidence, min))
		return
	}
	reason := fmt.Sprintf("%s by the reviewer agent (%s)", vd.Decision, v.ID)
	if vd.Decision != amp.DecisionRejected {
		r.transition(ctx, StatusDone, actorReviewer, reason)
		return
	}
	r.appendWorkLog(WorkLogLine(workflow.Now(ctx), "", "sent back by the reviewer agent ("+v.ID+"): "+issueList(vd.Issues), nil))
	r.transition(ctx, StatusReady, actorReviewer, reason)
}

// agentFallback leaves the review to the admins, saying why.
func (r *aofRun) agentFallback(ctx workflow.Context, id, why string) {
	r.AgentReview.Fallback = why
	r.event(ctx, EventReviewNoVerdict, actorScheduler, map[string]any{"ampTaskId": id, "reason": why})
}

// issueList is a rejection's issues on one line.
func issueList(issues []amp.Issue) string {
	parts := make([]string, len(issues))
	for i, is := range issues {
		parts[i] = fmt.Sprintf("[%s] %s:%d %s", is.Severity, is.File, is.Line, is.Description)
		if is.SuggestedFix != "" {
			parts[i] += " (suggested: " + is.SuggestedFix + ")"
		}
	}
	return strings.Join(parts, "; ")
}

// RegisterAgentReviewOptions registers AgentReviewWorkflow under
// AgentReviewType.
func RegisterAgentReviewOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: AgentReviewType}
}
