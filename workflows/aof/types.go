// Package aof runs AOF/1 tasks on Temporal: one workflow per AOF task
// holds its status, work log, run artifacts and delegation depth, takes
// the protocol's messages as updates, times out stale heartbeats with a
// durable timer and asks the admins to review through the decision
// engine. The wire format and the HTTP handlers live in
// integrations/aof; this package holds the workflow and its public types.
package aof

import (
	"regexp"
	"slices"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
)

// WorkflowType is the registered name of the AOF task workflow.
const WorkflowType = "AOFTask"

// workflowPrefix keeps AOF task workflows apart from AMP tasks.
const workflowPrefix = "aof-"

// WorkflowID returns the workflow id of an AOF task; it is the subject of
// the task's decisions too.
func WorkflowID(taskID string) string { return workflowPrefix + taskID }

// TaskIDOf returns the task id of an AOF workflow id, or false.
func TaskIDOf(workflowID string) (string, bool) {
	if len(workflowID) <= len(workflowPrefix) || workflowID[:len(workflowPrefix)] != workflowPrefix {
		return "", false
	}
	id := workflowID[len(workflowPrefix):]
	return id, ValidTaskID(id)
}

var taskIDPattern = regexp.MustCompile(`^TASK-\d{4}-\d{2}-\d{2}-\d{3}$`)

// ValidTaskID reports whether id has the TASK-YYYY-MM-DD-NNN form.
func ValidTaskID(id string) bool { return taskIDPattern.MatchString(id) }

// Status is where an AOF task stands.
type Status string

// AOF task statuses.
const (
	StatusBacklog    Status = "backlog"
	StatusReady      Status = "ready"
	StatusInProgress Status = "in_progress"
	StatusReview     Status = "review"
	StatusBlocked    Status = "blocked"
	StatusDone       Status = "done"
)

// Statuses lists every status in lifecycle order.
func Statuses() []Status {
	return []Status{StatusBacklog, StatusReady, StatusInProgress, StatusReview, StatusBlocked, StatusDone}
}

// ParseStatus reads a status as agents write it; AOF's own spelling
// "in-progress" is taken for in_progress.
func ParseStatus(s string) (Status, bool) {
	if s == "in-progress" {
		return StatusInProgress, true
	}
	st := Status(s)
	return st, slices.Contains(Statuses(), st)
}

// transitions are the valid moves: the lifecycle diagram (backlog →
// ready → in_progress → review → done, in_progress → blocked → ready),
// the stale-heartbeat reclaim (in_progress → ready), a rejected handoff
// (backlog or ready → blocked), and the review's answers (review → ready
// to send back, review → blocked).
var transitions = map[Status][]Status{
	StatusBacklog:    {StatusReady, StatusBlocked},
	StatusReady:      {StatusInProgress, StatusBlocked, StatusBacklog},
	StatusInProgress: {StatusReview, StatusBlocked, StatusReady},
	StatusReview:     {StatusDone, StatusReady, StatusBlocked},
	StatusBlocked:    {StatusReady},
	StatusDone:       {},
}

// ValidTransition reports whether a task may move from one status to
// another.
func ValidTransition(from, to Status) bool { return slices.Contains(transitions[from], to) }

// Outcome is what a completion report says of the work.
type Outcome string

// Completion outcomes.
const (
	OutcomeDone        Outcome = "done"
	OutcomeBlocked     Outcome = "blocked"
	OutcomeNeedsReview Outcome = "needs_review"
	OutcomePartial     Outcome = "partial"
)

// Outcomes lists every outcome.
func Outcomes() []Outcome {
	return []Outcome{OutcomeDone, OutcomeBlocked, OutcomeNeedsReview, OutcomePartial}
}

// ResolveCompletionTransitions returns the statuses a task at status
// passes through, in order, for a completion outcome: done goes to
// review, and on to done when no review is required; blocked to blocked;
// needs_review and partial to review. A done task takes none.
func ResolveCompletionTransitions(status Status, reviewRequired bool, outcome Outcome) []Status {
	switch outcome {
	case OutcomeDone:
		if status == StatusDone {
			return nil
		}
		if reviewRequired {
			return []Status{StatusReview}
		}
		return []Status{StatusReview, StatusDone}
	case OutcomeBlocked:
		return []Status{StatusBlocked}
	case OutcomeNeedsReview, OutcomePartial:
		return []Status{StatusReview}
	}
	return nil
}

// Message types of AOF/1.
const (
	TypeCompletionReport = "completion.report"
	TypeStatusUpdate     = "status.update"
	TypeHandoffRequest   = "handoff.request"
	TypeHandoffAccepted  = "handoff.accepted"
	TypeHandoffRejected  = "handoff.rejected"
)

// MessageTypes lists the message types of version 1.
func MessageTypes() []string {
	return []string{TypeHandoffRequest, TypeHandoffAccepted, TypeHandoffRejected, TypeStatusUpdate, TypeCompletionReport}
}

// Event types the protocol logs.
const (
	EventReceived           = "protocol.message.received"
	EventRejected           = "protocol.message.rejected"
	EventUnknown            = "protocol.message.unknown"
	EventTaskCreated        = "task.created"
	EventTaskCompleted      = "task.completed"
	EventTaskTransitioned   = "task.transitioned"
	EventTaskDispatched     = "task.dispatched"
	EventWorkLog            = "task.work_log"
	EventDelegationRequest  = "delegation.requested"
	EventDelegationAccepted = "delegation.accepted"
	EventDelegationRejected = "delegation.rejected"
	EventReviewRequested    = "review.requested"
	EventReviewDecided      = "review.decided"
)

// Rejection reasons, as the document names them.
const (
	ReasonInvalidJSON      = "invalid_json"
	ReasonInvalidEnvelope  = "invalid_envelope"
	ReasonTaskNotFound     = "task_not_found"
	ReasonTaskIDMismatch   = "taskId_mismatch"
	ReasonParentNotFound   = "parent_not_found"
	ReasonNestedDelegation = "nested_delegation"
	// ReasonParentConflict refuses re-parenting a task already linked to
	// another parent.
	ReasonParentConflict = "parent_conflict"
	// ReasonStaleReclaim is the reason of a reclaim after a stale
	// heartbeat with no run result; with one, the reason is
	// "stale_heartbeat_<outcome>".
	ReasonStaleReclaim = "stale_heartbeat_reclaim"
)

// Event is one logged protocol event.
type Event struct {
	// ID is unique per event; a retried write of it is kept once.
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	TaskID  string         `json:"taskId,omitempty"`
	Actor   string         `json:"actor"`
	At      time.Time      `json:"timestamp"`
	Payload map[string]any `json:"payload"`
}

// TestReport counts a run's tests.
type TestReport struct {
	Total  int `json:"total"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// CompletionReport is a completion.report payload.
type CompletionReport struct {
	Outcome      Outcome    `json:"outcome"`
	SummaryRef   string     `json:"summaryRef"`
	HandoffRef   string     `json:"handoffRef,omitempty"`
	Deliverables []string   `json:"deliverables"`
	Tests        TestReport `json:"tests"`
	Blockers     []string   `json:"blockers"`
	Notes        string     `json:"notes"`
}

// StatusUpdate is a status.update payload.
type StatusUpdate struct {
	TaskID   string   `json:"taskId"`
	AgentID  string   `json:"agentId"`
	Status   Status   `json:"status,omitempty"`
	Progress string   `json:"progress,omitempty"`
	Blockers []string `json:"blockers,omitempty"`
	Notes    string   `json:"notes,omitempty"`
}

// HandoffRequest is a handoff.request payload; it is written as the
// child's inputs/handoff.json.
type HandoffRequest struct {
	TaskID             string   `json:"taskId"`
	ParentTaskID       string   `json:"parentTaskId"`
	FromAgent          string   `json:"fromAgent"`
	ToAgent            string   `json:"toAgent"`
	AcceptanceCriteria []string `json:"acceptanceCriteria"`
	ExpectedOutputs    []string `json:"expectedOutputs"`
	ContextRefs        []string `json:"contextRefs"`
	Constraints        []string `json:"constraints"`
	DueBy              string   `json:"dueBy"`
}

// HandoffReply is the payload of handoff.accepted and handoff.rejected.
type HandoffReply struct {
	TaskID   string `json:"taskId"`
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
}

// Message is a valid AOF/1 message: the envelope's fields and its one
// typed payload.
type Message struct {
	Type      string    `json:"type"`
	TaskID    string    `json:"taskId"`
	FromAgent string    `json:"fromAgent"`
	ToAgent   string    `json:"toAgent"`
	SentAt    time.Time `json:"sentAt"`

	Completion *CompletionReport `json:"completion,omitempty"`
	Status     *StatusUpdate     `json:"status,omitempty"`
	Handoff    *HandoffRequest   `json:"handoff,omitempty"`
	Reply      *HandoffReply     `json:"reply,omitempty"`

	// Warnings are problems that do not stop the message (invalid
	// acceptance criteria of a handoff, a completion's summary or handoff
	// file missing under aof.data_dir); they are logged with it, and a
	// completion's on its task.completed.
	Warnings []string `json:"warnings,omitempty"`
}

// RunInfo is run.json, written when a task is dispatched.
type RunInfo struct {
	TaskID        string            `json:"taskId"`
	AgentID       string            `json:"agentId"`
	StartedAt     Timestamp         `json:"startedAt"`
	Status        string            `json:"status"`
	ArtifactPaths map[string]string `json:"artifactPaths"`
	Metadata      map[string]any    `json:"metadata"`
}

// Run statuses of run.json.
const (
	RunRunning = "running"
	RunExpired = "expired"
)

// Heartbeat is run_heartbeat.json.
type Heartbeat struct {
	TaskID        string    `json:"taskId"`
	AgentID       string    `json:"agentId"`
	LastHeartbeat Timestamp `json:"lastHeartbeat"`
	BeatCount     int       `json:"beatCount"`
	ExpiresAt     Timestamp `json:"expiresAt"`
}

// RunResult is run_result.json, written on a completion report.
type RunResult struct {
	TaskID       string     `json:"taskId"`
	AgentID      string     `json:"agentId"`
	CompletedAt  Timestamp  `json:"completedAt"`
	Outcome      Outcome    `json:"outcome"`
	SummaryRef   string     `json:"summaryRef"`
	HandoffRef   string     `json:"handoffRef,omitempty"`
	Deliverables []string   `json:"deliverables"`
	Tests        TestReport `json:"tests"`
	Blockers     []string   `json:"blockers"`
	Notes        string     `json:"notes"`
}

// Artifact names, relative to the run (runs/<taskId>/) or, for the
// handoff, to the task's directory.
const (
	ArtifactRun         = "run.json"
	ArtifactHeartbeat   = "run_heartbeat.json"
	ArtifactResult      = "run_result.json"
	ArtifactHandoffJSON = "inputs/handoff.json"
	ArtifactHandoffMD   = "inputs/handoff.md"
)

// DefaultTTL is a heartbeat's life when dispatch names none; MaxTTL
// bounds the one it names: the run's lease lives as long, and a lease
// lives at most a day.
const (
	DefaultTTL = 5 * time.Minute
	MaxTTL     = 24 * time.Hour
)

// LeaseKey is the resource key of a task's lease, held by the agent that
// runs it.
func LeaseKey(taskID string) string { return "aof/" + taskID }

// Metadata is the task's frontmatter metadata.
type Metadata struct {
	DelegationDepth int  `json:"delegationDepth"`
	ReviewRequired  bool `json:"reviewRequired"`
}

// Task is what the API shows of an AOF task.
type Task struct {
	TaskID   string `json:"taskId"`
	Title    string `json:"title"`
	Body     string `json:"body,omitempty"`
	Assignee string `json:"assignee,omitempty"`
	// CreatedBy is who created the task: the token's name.
	CreatedBy    string   `json:"createdBy,omitempty"`
	Status       Status   `json:"status"`
	ParentTaskID string   `json:"parentTaskId,omitempty"`
	Metadata     Metadata `json:"metadata"`
	// WorkLog holds the work log lines, "- <timestamp> Progress: … |
	// Notes: … | Blockers: …".
	WorkLog []string `json:"workLog"`
	// WorkLogDropped counts the oldest lines dropped from the work log
	// to keep it within MaxWorkLogLines and MaxWorkLogBytes; the events
	// keep the messages they came from.
	WorkLogDropped int       `json:"workLogDropped,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// Run, Heartbeat and Result are the run artifacts, when written.
	Run       *RunInfo        `json:"run,omitempty"`
	Heartbeat *Heartbeat      `json:"heartbeat,omitempty"`
	Result    *RunResult      `json:"result,omitempty"`
	Handoff   *HandoffRequest `json:"handoff,omitempty"`
	// Delegation is where the handoff stands: requested, accepted or
	// rejected.
	Delegation string `json:"delegation,omitempty"`
	// TTLMs is the run's heartbeat life in milliseconds.
	TTLMs int64 `json:"ttlMs,omitempty"`
	// LeaseID is the lease of LeaseKey the running agent holds; it is
	// released when the task leaves in_progress.
	LeaseID string `json:"leaseId,omitempty"`
	// Review is the open review decision, if any.
	Review *decision.Decision `json:"review,omitempty"`
	// AgentReview is where the reviewer agent's review stands, once one
	// was asked for (aof.review: agent).
	AgentReview *AgentReviewState `json:"agentReview,omitempty"`
	// Rev counts the task's changes.
	Rev int64 `json:"rev"`
}
