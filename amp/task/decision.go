package task

import "github.com/ampflow/ampflow/amp/decision"

// The kinds of decision a task raises.
const (
	KindPlanApproval      decision.Kind = "plan_approval"
	KindAckTimeout        decision.Kind = "ack_timeout"
	KindHeartbeatTimeout  decision.Kind = "heartbeat_timeout"
	KindPartialResult     decision.Kind = "partial_result"
	KindCIExhausted       decision.Kind = "ci_exhausted"
	KindLowConfidence     decision.Kind = "low_confidence"
	KindHallucinationLock decision.Kind = "hallucination_lock"
	KindBranchViolation   decision.Kind = "branch_violation"
	KindFinalApproval     decision.Kind = "final_approval"
	KindResultProblem     decision.Kind = "result_problem"
	KindAgentEscalation   decision.Kind = "agent_escalation"
	// KindDeliveryFailed: a message could not be delivered to its agent
	// (a command-mode agent failed, a webhook refused it).
	KindDeliveryFailed decision.Kind = "delivery_failed"
	// KindLeaseWait: the task waited policy.lease_wait for its branch's
	// lease, which another task still holds.
	KindLeaseWait decision.Kind = "lease_wait"
)

// Option ids of task decisions besides decision.OptApprove (approve the
// plan, the work, or anyway) and decision.OptReject (reject the plan,
// which ends the task, or override a verdict to rejected). Each decision
// offers a subset.
const (
	OptRedispatch  = "redispatch"   // send the subtask to the executor again
	OptWait        = "wait"         // keep waiting for the agent
	OptTerminate   = "terminate"    // end the task
	OptAccept      = "accept"       // accept a partial result or a verdict as it is
	OptReviewAgain = "review_again" // send a new review request
	OptReplan      = "replan"       // new subtasks (taken by the replan update)
	OptSkipCI      = "skip_ci"      // go to review despite failing CI
	OptRetryCI     = "retry_ci"     // read CI again
	OptResume      = "resume"       // carry on where the task was suspended
)

// DecideResult is what a decide update returns. An answer that closes
// the decision carries its Outcome; an approval counted towards a quorum
// not yet reached leaves the decision open and carries the Decision as it
// stands and its Progress ("1 of 2 approvals: ops") instead. Note says
// when the approval had been counted already.
type DecideResult struct {
	Outcome  decision.Outcome   `json:"outcome,omitzero"`
	Decision *decision.Decision `json:"decision,omitempty"`
	Progress *decision.Progress `json:"progress,omitempty"`
	Note     string             `json:"note,omitempty"`
	Status   Status             `json:"status"`
}

// Open reports whether the answer left the decision open.
func (r DecideResult) Open() bool { return r.Outcome.DecisionID == "" && r.Decision != nil }
