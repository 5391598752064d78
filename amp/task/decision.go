package task

import (
	"time"

	"github.com/ampflow/ampflow/amp"
)

// DecisionKind names the gate a decision belongs to.
type DecisionKind string

// Decision kinds.
const (
	KindPlanApproval      DecisionKind = "plan_approval"
	KindAckTimeout        DecisionKind = "ack_timeout"
	KindHeartbeatTimeout  DecisionKind = "heartbeat_timeout"
	KindPartialResult     DecisionKind = "partial_result"
	KindCIExhausted       DecisionKind = "ci_exhausted"
	KindLowConfidence     DecisionKind = "low_confidence"
	KindHallucinationLock DecisionKind = "hallucination_lock"
	KindBranchViolation   DecisionKind = "branch_violation"
	KindFinalApproval     DecisionKind = "final_approval"
	KindResultProblem     DecisionKind = "result_problem"
	KindAgentEscalation   DecisionKind = "agent_escalation"
	// KindDeliveryFailed: a message could not be delivered to its agent
	// (a command-mode agent failed, a webhook refused it).
	KindDeliveryFailed DecisionKind = "delivery_failed"
)

// Option ids. Each decision offers a subset.
const (
	OptApprove     = "approve"      // approve the plan, the work, or anyway
	OptReject      = "reject"       // reject the plan (ends the task) or override a verdict to rejected
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

// OptWithdrawn is the option recorded when a decision closes without an
// admin because what it asked became moot (a late ACK, say).
const OptWithdrawn = "withdrawn"

// Option is one choice of a decision.
type Option struct {
	ID           string `json:"id"`
	Label        string `json:"label"`
	NoteRequired bool   `json:"note_required,omitempty"`
}

// Decision is a gate waiting for an admin. At most one is open per task.
type Decision struct {
	ID       string       `json:"id"`
	TaskID   string       `json:"task_id"`
	Kind     DecisionKind `json:"kind"`
	Prompt   string       `json:"prompt"`
	Options  []Option     `json:"options"`
	RaisedAt time.Time    `json:"raised_at"`
	// Escalation is the escalation message behind the decision, if any.
	Escalation *amp.Message `json:"escalation,omitempty"`
	// Context gives the deciding admin what they need at a glance.
	Context DecisionContext `json:"context"`
}

// DecisionContext is what a decision message shows about its task.
type DecisionContext struct {
	Description string      `json:"description"`
	Repo        string      `json:"repo"`
	Branch      string      `json:"branch"`
	Risk        amp.Risk    `json:"risk"`
	Subtask     string      `json:"subtask,omitempty"`
	RejectCount int         `json:"reject_count"`
	CIState     string      `json:"ci_state,omitempty"`
	Issues      []amp.Issue `json:"issues,omitempty"`
	Blockers    []string    `json:"blockers,omitempty"`
	Confidence  *float64    `json:"confidence,omitempty"`
	Suggested   []string    `json:"suggested_actions,omitempty"`
	// AgentStderr is the end of a failed command-mode agent's stderr,
	// secrets masked.
	AgentStderr string         `json:"agent_stderr,omitempty"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// Option returns the option with the given id.
func (d Decision) Option(id string) (Option, bool) {
	for _, o := range d.Options {
		if o.ID == id {
			return o, true
		}
	}
	return Option{}, false
}

// DecideInput is an admin's choice on a pending decision.
type DecideInput struct {
	DecisionID string `json:"decision_id"`
	Option     string `json:"option"`
	Note       string `json:"note,omitempty"`
	By         string `json:"by"`
	// Channel is where the admin decided: cli, api, slack or telegram.
	Channel string `json:"channel"`
}

// Outcome records how a decision was taken.
type Outcome struct {
	DecisionID string       `json:"decision_id"`
	Kind       DecisionKind `json:"kind"`
	Option     string       `json:"option"`
	Note       string       `json:"note,omitempty"`
	By         string       `json:"by"`
	Channel    string       `json:"channel"`
	At         time.Time    `json:"at"`
}

// DecideResult is what a decide update returns.
type DecideResult struct {
	Outcome Outcome `json:"outcome"`
	Status  Status  `json:"status"`
}
