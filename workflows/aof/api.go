package aof

import (
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// Handler names of the AOF task workflow. The decision engine's update is
// task.UpdateDecide.
const (
	// UpdateMessage hands the task a valid AOF/1 message (MessageInput →
	// Result).
	UpdateMessage = "aof.message"
	// UpdateDispatch moves a ready task to in_progress for an agent and
	// starts its heartbeat (DispatchInput → Result).
	UpdateDispatch = "aof.dispatch"
	// UpdateHeartbeat renews the running agent's heartbeat
	// (HeartbeatInput → Result).
	UpdateHeartbeat = "aof.heartbeat"
	// UpdateSessionEnd applies a pending run result (SessionEndInput →
	// Result).
	UpdateSessionEnd = "aof.session_end"
	// UpdateSync returns the task once its state is saved (SyncInput →
	// Result): creating a task waits on it.
	UpdateSync = "aof.sync"
	// QueryTask returns the task (Task).
	QueryTask = "aof.task"
)

// Error codes of AOF refusals; integrations/aof maps each to an HTTP
// status.
const (
	CodeInvalidJSON      task.Code = ReasonInvalidJSON
	CodeInvalidEnvelope  task.Code = ReasonInvalidEnvelope
	CodeTaskNotFound     task.Code = ReasonTaskNotFound
	CodeTaskIDMismatch   task.Code = ReasonTaskIDMismatch
	CodeParentNotFound   task.Code = ReasonParentNotFound
	CodeNestedDelegation task.Code = ReasonNestedDelegation
	// CodeUnknownType refuses a message of a type AOF/1 does not have.
	CodeUnknownType task.Code = "unknown_type"
	// CodeInvalidTransition refuses a move the task's status does not
	// allow (dispatching a task that is not ready).
	CodeInvalidTransition task.Code = "invalid_transition"
	// CodeParentConflict refuses a handoff.request that would re-parent
	// a task already linked to another parent.
	CodeParentConflict task.Code = ReasonParentConflict
	// CodeLeaseHeld refuses a dispatch while another agent holds the
	// task's lease.
	CodeLeaseHeld task.Code = "lease_held"
	// CodeNotRunning refuses a heartbeat of a task no agent runs, or of
	// another agent than the one that runs it.
	CodeNotRunning task.Code = "not_running"
)

// Input starts an AOF task workflow; a continue-as-new carries the rest.
type Input struct {
	Task Task `json:"task"`
	// Decisions is the decision engine's state.
	Decisions decide.State `json:"decisions"`
	// Seq numbers the task's events.
	Seq int `json:"seq"`
	// Policy is who may decide and the decisions' timers; read from the
	// worker once.
	Policy *task.Policy `json:"policy,omitempty"`
	// Reviewer, set when the task is created with aof.review: agent, has
	// the AMP reviewer agent review the task; nil: the admins do.
	Reviewer *AgentReviewer `json:"reviewer,omitempty"`
	// AgentReview is where the task's agent review stands.
	AgentReview AgentReviewState `json:"agentReview,omitzero"`
}

// AgentReviewState is where an AOF task's review by the reviewer agent
// stands.
type AgentReviewState struct {
	// AMPTaskID is the current or last review's AMP task id, the task_id
	// of the reviewer's messages; Round counts the reviews started.
	AMPTaskID string `json:"ampTaskId"`
	Round     int    `json:"round"`
	// Running is true while a review waits for the reviewer.
	Running bool `json:"running,omitempty"`
	// Outcome is how the last review ended: the verdict's decision
	// (approved, approved_with_fix, rejected), no_verdict, or ended (the
	// task left review first).
	Outcome string `json:"outcome,omitempty"`
	// Fallback, while the admins review instead, says why; Stderr is a
	// command-mode reviewer's that failed.
	Fallback string `json:"fallback,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	// Rejections counts the reviewer's rejections of the task's work;
	// LastVerdict is the msg_id of its last verdict.
	Rejections  int    `json:"rejections,omitempty"`
	LastVerdict string `json:"lastVerdict,omitempty"`
}

// MessageInput is a valid message for the task.
type MessageInput struct {
	Message Message `json:"message"`
	// ParentDepth is the parent's delegationDepth, for a handoff.request.
	ParentDepth int `json:"parentDepth"`
	// Agent is the executor or reviewer whose token sent the message;
	// empty for an admin, a coordinator or an API without tokens, who
	// may act for any agent. An agent acts only on what is its own
	// (Authorize).
	Agent string `json:"agent,omitempty"`
	// ParentOwners are the parent task's owners (Owners), for a
	// handoff.request: the side that hands the task off.
	ParentOwners []string `json:"parentOwners,omitempty"`
	// At and Signature sign the message with who sent it (Agent, the
	// parent's depth and owners), as an answer's (SignedAs): Client
	// signs every message, and the task takes no other, so a raw
	// Temporal update can neither act for every agent (no Agent) nor
	// name one.
	decision.Signed
}

// SignedAs is the answer a message's signature covers
// (decision.SignedAs).
func (in MessageInput) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(UpdateMessage, in, in.Agent, "")
}

// DispatchInput starts a run of the task. It is taken only signed with
// the decision key (Client signs it; At and Signature as an answer's,
// SignedAs): an admin may dispatch for any agent, so a raw Temporal
// update must not.
type DispatchInput struct {
	AgentID string `json:"agentId"`
	// By is who dispatched: the token's name, set by the API, which
	// the event log names as the actor.
	By string `json:"by,omitempty"`
	// TTLMs is the heartbeat's life in milliseconds; zero is DefaultTTL.
	TTLMs int64 `json:"ttlMs"`
	decision.Signed
}

// SignedAs is the answer a dispatch's signature covers
// (decision.SignedAs).
func (in DispatchInput) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(UpdateDispatch, in, in.AgentID, "")
}

// HeartbeatInput is a running agent's sign of life.
type HeartbeatInput struct {
	AgentID string `json:"agentId"`
}

// SessionEndInput ends an agent's session; an empty AgentID ends every
// session.
// It is taken only signed, as DispatchInput.
type SessionEndInput struct {
	AgentID string `json:"agentId,omitempty"`
	decision.Signed
}

// SignedAs is the answer a session end's signature covers
// (decision.SignedAs).
func (in SessionEndInput) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(UpdateSessionEnd, in, in.AgentID, "")
}

// SyncInput is empty; it exists so fields can be added.
type SyncInput struct{}

// Result is what a handler did.
type Result struct {
	Task Task `json:"task"`
	// Changed is false when the input changed nothing: a repeat, or a
	// message the task's state makes a no-op.
	Changed bool `json:"changed"`
	// Note says why nothing or something else changed.
	Note string `json:"note,omitempty"`
}
