package task

import (
	"encoding/json"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/decision"
)

// State is what the state query returns.
type State struct {
	TaskID      string   `json:"task_id"`
	Status      Status   `json:"status"`
	Risk        amp.Risk `json:"risk_level"`
	Description string   `json:"description"`
	Repo        string   `json:"repo"`
	Branch      string   `json:"branch"`
	// CIRepo is the GitHub repository (HOST/OWNER/NAME) whose checks
	// count, fixed when the task started; empty when it has none.
	CIRepo string `json:"ci_repo,omitempty"`
	// PullRequest is the URL of the task's pull request; MergeCommit the
	// commit that merged it. Empty without delivery.pull_request.
	PullRequest  string        `json:"pull_request,omitempty"`
	MergeCommit  string        `json:"merge_commit,omitempty"`
	Subtasks     []amp.Subtask `json:"subtasks"`
	SubtaskIndex int           `json:"subtask_index"`
	// Subtask is the current subtask, nil before dispatch and after the last.
	Subtask     *amp.Subtask `json:"subtask,omitempty"`
	RejectCount int          `json:"reject_count"`
	// DiffMismatches lists where the executor's diff_summary of the
	// current result differs from what git shows.
	DiffMismatches []string           `json:"diff_mismatches"`
	CIRounds       int                `json:"ci_rounds"`
	Rounds         int                `json:"rounds"`
	Pending        *decision.Decision `json:"pending,omitempty"`
	Decided        []decision.Outcome `json:"decided"`
	// Outbox holds the messages sent to agents that still await their
	// ACK or reply: what an agent's inbox shows.
	Outbox []amp.Message `json:"outbox"`
	// Lease is the branch lease the task holds; LeaseHolder, while it
	// waits for the lease, is the task that holds it.
	Lease       *BranchLease    `json:"lease,omitempty"`
	LeaseHolder string          `json:"lease_holder,omitempty"`
	Timeline    []TimelineEntry `json:"timeline"`
	LastError   string          `json:"last_error,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	StartedAt   time.Time       `json:"started_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// TimelineEntry is one event of a task: a message, an ACK, a heartbeat, a
// decision or a status change.
type TimelineEntry struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"` // message, ack, heartbeat, decision, status
	MsgID  string    `json:"msg_id,omitempty"`
	Type   string    `json:"type,omitempty"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Status Status    `json:"status,omitempty"`
	Note   string    `json:"note,omitempty"`
}

// MarshalJSON writes every list of the state as [] when it is empty,
// never null.
func (s State) MarshalJSON() ([]byte, error) {
	type plain State
	p := plain(s)
	p.Subtasks, p.DiffMismatches, p.Decided = orEmpty(p.Subtasks), orEmpty(p.DiffMismatches), orEmpty(p.Decided)
	p.Outbox, p.Timeline = orEmpty(p.Outbox), orEmpty(p.Timeline)
	return json.Marshal(p)
}

// orEmpty is s, or an empty slice for nil.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
