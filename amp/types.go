// Package amp implements AMP/1.0, the Agent Message Protocol: the envelope,
// the five message types, the ACK record, strict parsing and JSON Schemas.
//
// It imports nothing else of ampflow.
package amp

import "encoding/json"

// ProtocolVersion is the only protocol_version this package accepts.
const ProtocolVersion = "AMP/1.0"

// Type is the type of an AMP message.
type Type string

// The five message types.
const (
	TypeTaskDispatch  Type = "task_dispatch"
	TypeTaskResult    Type = "task_result"
	TypeReviewRequest Type = "review_request"
	TypeReviewVerdict Type = "review_verdict"
	TypeEscalation    Type = "escalation"
)

// Types lists the five message types in protocol order.
func Types() []Type {
	return []Type{TypeTaskDispatch, TypeTaskResult, TypeReviewRequest, TypeReviewVerdict, TypeEscalation}
}

// Role is a participant: the from and to of an envelope.
type Role string

// The roles. System may only send; it is never a recipient.
const (
	RoleAdmin       Role = "admin"
	RoleCoordinator Role = "coordinator"
	RoleExecutor    Role = "executor"
	RoleReviewer    Role = "reviewer"
	RoleSystem      Role = "system"
)

// Message is the base envelope common to every AMP message. Payload holds
// one of *TaskDispatch, *TaskResult, *ReviewRequest, *ReviewVerdict or
// *Escalation, according to Type.
type Message struct {
	MsgID           string   `json:"msg_id"`
	ProtocolVersion string   `json:"protocol_version"`
	Type            Type     `json:"type"`
	From            Role     `json:"from"`
	To              Role     `json:"to"`
	TaskID          string   `json:"task_id"`
	Timestamp       string   `json:"timestamp"`
	RequiresAck     bool     `json:"requires_ack"`
	AckTimeoutSec   *int     `json:"ack_timeout_sec,omitempty"`
	ContextRef      []string `json:"context_ref,omitempty"`
	Payload         Payload  `json:"payload"`
}

// Payload is the type-specific body of a message.
type Payload interface {
	// MessageType names the message type this payload belongs to.
	MessageType() Type
}

// Risk is a task's risk_level.
type Risk string

// Risk levels.
const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// TaskDispatch is the payload of task_dispatch (coordinator → executor).
type TaskDispatch struct {
	Description        string         `json:"description"`
	Repo               string         `json:"repo"`
	Branch             string         `json:"branch"`
	Subtasks           []Subtask      `json:"subtasks"`
	AcceptanceCriteria []string       `json:"acceptance_criteria"`
	RiskLevel          Risk           `json:"risk_level"`
	ForbiddenActions   []string       `json:"forbidden_actions,omitempty"`
	TechConstraints    map[string]any `json:"tech_constraints,omitempty"`
}

// Subtask is one ordered step of a dispatch.
type Subtask struct {
	SubtaskID      string `json:"subtask_id"`
	Description    string `json:"description"`
	EstimatedLines int    `json:"estimated_lines"`
}

// CompletionStatus is a task_result's completion_status.
type CompletionStatus string

// Completion statuses.
const (
	StatusComplete CompletionStatus = "complete"
	StatusPartial  CompletionStatus = "partial"
	StatusFailed   CompletionStatus = "failed"
)

// TaskResult is the payload of task_result (executor → coordinator).
type TaskResult struct {
	SubtaskID        string           `json:"subtask_id"`
	CompletionStatus CompletionStatus `json:"completion_status"`
	DiffSummary      DiffSummary      `json:"diff_summary"`
	SelfAssessment   SelfAssessment   `json:"self_assessment"`
	WorkLog          []WorkLogEntry   `json:"work_log"`
	CommitHash       string           `json:"commit_hash,omitempty"`
	Blockers         []string         `json:"blockers,omitempty"`
}

// DiffSummary is what an executor claims it changed.
type DiffSummary struct {
	FilesChanged []string `json:"files_changed"`
	LinesAdded   int      `json:"lines_added"`
	LinesRemoved int      `json:"lines_removed"`
}

// SelfAssessment is the executor's own judgement per acceptance criterion;
// a nil entry means it could not verify that criterion.
type SelfAssessment struct {
	CriteriaMet []*bool  `json:"criteria_met"`
	Notes       []string `json:"notes"`
}

// WorkLogEntry is one line of an executor's work log.
type WorkLogEntry struct {
	Timestamp string `json:"timestamp"`
	Action    string `json:"action"`
	File      string `json:"file"`
	Detail    string `json:"detail"`
}

// ReviewScope is a review_request's review_scope.
type ReviewScope string

// Review scopes.
const (
	ScopeFull        ReviewScope = "full"
	ScopeIncremental ReviewScope = "incremental"
)

// ReviewRequest is the payload of review_request (coordinator → reviewer).
type ReviewRequest struct {
	OriginalDispatchRef string         `json:"original_dispatch_ref"`
	TaskResultRef       string         `json:"task_result_ref"`
	ReviewScope         ReviewScope    `json:"review_scope"`
	DiffURL             string         `json:"diff_url"`
	RejectCount         int            `json:"reject_count"`
	CoordinatorNotes    string         `json:"coordinator_notes,omitempty"`
	CIStatus            map[string]any `json:"ci_status,omitempty"`
}

// Decision is a review_verdict's decision.
type Decision string

// Verdict decisions.
const (
	DecisionApproved        Decision = "approved"
	DecisionApprovedWithFix Decision = "approved_with_fix"
	DecisionRejected        Decision = "rejected"
)

// ReviewVerdict is the payload of review_verdict (reviewer → coordinator).
type ReviewVerdict struct {
	Decision          Decision          `json:"decision"`
	CriteriaResults   []CriterionResult `json:"criteria_results"`
	Issues            []Issue           `json:"issues,omitempty"`
	DirectFixes       []DirectFix       `json:"direct_fixes,omitempty"`
	ArchitectureNotes string            `json:"architecture_notes,omitempty"`
	Confidence        float64           `json:"confidence"`
}

// CriterionResult is the reviewer's finding on one acceptance criterion;
// Passed is nil when it could not be decided (CI still running, say).
type CriterionResult struct {
	Criterion string `json:"criterion"`
	Passed    *bool  `json:"passed"`
	Evidence  string `json:"evidence"`
}

// Severity grades a review issue or an escalation.
type Severity string

// Issue severities (critical and major block; minor does not).
const (
	SeverityCritical Severity = "critical"
	SeverityMajor    Severity = "major"
	SeverityMinor    Severity = "minor"
)

// Escalation severities (critical is shared with issues).
const (
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Issue is one problem a reviewer found.
type Issue struct {
	Severity     Severity `json:"severity"`
	File         string   `json:"file"`
	Line         int      `json:"line"`
	Description  string   `json:"description"`
	SuggestedFix string   `json:"suggested_fix"`
}

// ChangeType is the kind of a reviewer's direct fix.
type ChangeType string

// Direct fix kinds: the only ones a reviewer may make itself.
const (
	ChangeTypo        ChangeType = "typo"
	ChangeLint        ChangeType = "lint"
	ChangeWhitespace  ChangeType = "whitespace"
	ChangeImportOrder ChangeType = "import_order"
)

// DirectFix is a trivial change the reviewer made itself (fewer than five lines).
type DirectFix struct {
	File       string     `json:"file"`
	ChangeType ChangeType `json:"change_type"`
	DiffLines  int        `json:"diff_lines"`
}

// EscalationType says why an escalation was raised.
type EscalationType string

// Escalation types.
const (
	EscHallucinationLock EscalationType = "hallucination_lock"
	EscAckTimeout        EscalationType = "ack_timeout"
	EscBranchViolation   EscalationType = "branch_violation"
	EscCIFailure         EscalationType = "ci_failure"
	EscConflict          EscalationType = "conflict"
	EscHeartbeatTimeout  EscalationType = "heartbeat_timeout"
	EscPermissionDenied  EscalationType = "permission_denied"
	EscUnknown           EscalationType = "unknown"
)

// Escalation is the payload of escalation (any sender → admin).
type Escalation struct {
	EscalationType      EscalationType `json:"escalation_type"`
	Severity            Severity       `json:"severity"`
	TriggeredBy         Role           `json:"triggered_by"`
	Description         string         `json:"description"`
	AffectedMsgs        []string       `json:"affected_msgs"`
	SystemStateSnapshot map[string]any `json:"system_state_snapshot"`
	SuggestedActions    []string       `json:"suggested_actions,omitempty"`
	AutoSuspended       bool           `json:"auto_suspended"`
}

// MessageType implements Payload.
func (*TaskDispatch) MessageType() Type { return TypeTaskDispatch }

// MessageType implements Payload.
func (*TaskResult) MessageType() Type { return TypeTaskResult }

// MessageType implements Payload.
func (*ReviewRequest) MessageType() Type { return TypeReviewRequest }

// MessageType implements Payload.
func (*ReviewVerdict) MessageType() Type { return TypeReviewVerdict }

// MessageType implements Payload.
func (*Escalation) MessageType() Type { return TypeEscalation }

// Ack is the ACK record a receiver writes for a message that requires one.
// Its msg_id is "ack-{task_id}-{unix_ms}"; AckOf is the acknowledged msg_id.
// The spec names ACKs but gives them no schema; this is ampflow's.
type Ack struct {
	MsgID           string         `json:"msg_id"`
	ProtocolVersion string         `json:"protocol_version"`
	AckOf           string         `json:"ack_of"`
	TaskID          string         `json:"task_id"`
	From            Role           `json:"from"`
	Timestamp       string         `json:"timestamp"`
	Metadata        map[string]any `json:"metadata,omitempty"`
}

// AckPrefix is the type segment of an ACK record's msg_id.
const AckPrefix = "ack"

// Record is either a message or an ACK record, as agents send them.
type Record struct {
	Message *Message
	Ack     *Ack
}

// ID returns the record's msg_id.
func (r Record) ID() string {
	if r.Ack != nil {
		return r.Ack.MsgID
	}
	if r.Message != nil {
		return r.Message.MsgID
	}
	return ""
}

// rawMessage mirrors Message with an undecoded payload.
type rawMessage struct {
	MsgID           string          `json:"msg_id"`
	ProtocolVersion string          `json:"protocol_version"`
	Type            Type            `json:"type"`
	From            Role            `json:"from"`
	To              Role            `json:"to"`
	TaskID          string          `json:"task_id"`
	Timestamp       string          `json:"timestamp"`
	RequiresAck     bool            `json:"requires_ack"`
	AckTimeoutSec   *int            `json:"ack_timeout_sec,omitempty"`
	ContextRef      []string        `json:"context_ref,omitempty"`
	Payload         json.RawMessage `json:"payload"`
}
