package task

import (
	"encoding/json"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
)

// State is what the state query returns.
type State struct {
	TaskID string `json:"task_id"`
	// Status is where the task stands as people see it: awaiting_admin
	// while a decision is open in an agent's turn (ReportedStatus).
	Status Status `json:"status"`
	// WaitingFor is the kind of the decision open on the task, what it
	// waits for from the admins; empty when none is open.
	WaitingFor decision.Kind `json:"waiting_for,omitempty"`
	// UnderlyingStatus is the turn the task is in (in_progress, say) while
	// Status reports awaiting_admin for an open decision; empty otherwise.
	UnderlyingStatus Status `json:"underlying_status,omitempty"`
	// Recovering is the agent's run that ampflow knows died and delivers
	// again; Status reports recovering over the agent's turn while it is
	// set. Empty once the retried run has started.
	Recovering *Recovery `json:"recovering,omitempty"`
	Risk       amp.Risk  `json:"risk_level"`
	// PlanApproval is how the plan is approved, auto or admin: the task's
	// policy for its risk level, made stricter by the coordinator's
	// handling. Empty until the task has read its policy.
	PlanApproval Handling `json:"plan_approval,omitempty"`
	Description  string   `json:"description"`
	// Coordinator is who started the task; they, and the admins, may
	// steer its agent.
	Coordinator string `json:"coordinator,omitempty"`
	// Origin is the tracker's item the task came from; absent for none.
	Origin *Origin `json:"origin,omitempty"`
	Repo   string  `json:"repo"`
	Branch string  `json:"branch"`
	// CIRepo is the GitHub repository (HOST/OWNER/NAME) whose checks
	// count, fixed when the task started; empty when it has none.
	CIRepo string `json:"ci_repo,omitempty"`
	// PullRequest is the URL of the task's pull request; MergeCommit the
	// commit that merged it. Empty without delivery.pull_request.
	PullRequest string `json:"pull_request,omitempty"`
	MergeCommit string `json:"merge_commit,omitempty"`
	// Queue is the task's place in its target's merge queue; absent for
	// a task without one (task.Input.Queue) until it enters it.
	Queue        *QueueState   `json:"queue,omitempty"`
	Subtasks     []amp.Subtask `json:"subtasks"`
	SubtaskIndex int           `json:"subtask_index"`
	// Subtask is the current subtask, nil before dispatch and after the last.
	Subtask     *amp.Subtask `json:"subtask,omitempty"`
	RejectCount int          `json:"reject_count"`
	// DiffMismatches lists where the executor's diff_summary of the
	// current result differs from what git shows.
	DiffMismatches []string `json:"diff_mismatches"`
	// ResultChecked is the result whose check against git
	// DiffMismatches reports.
	ResultChecked string `json:"result_checked,omitempty"`
	CIRounds      int    `json:"ci_rounds"`
	// CI is off when the task's policy has no CI (ci.provider none);
	// else the state of its last CI reading: pending, passed, failed,
	// timed_out or none, empty before the first. CIRound is the number
	// of its last CI round, 0 before the first (ampflow task ci lists
	// them).
	CI      string             `json:"ci,omitempty"`
	CIRound int                `json:"ci_round"`
	Rounds  int                `json:"rounds"`
	Pending *decision.Decision `json:"pending,omitempty"`
	Decided []decision.Outcome `json:"decided"`
	// Outbox holds the messages sent to agents that still await their
	// ACK or reply: what an agent's inbox shows.
	Outbox []amp.Message `json:"outbox"`
	// Holders names, per role, the agent that holds the task's work.
	Holders []Holder `json:"holders"`
	// Lease is the branch lease the task holds; LeaseHolder, while it
	// waits for the lease, is the task that holds it.
	Lease       *BranchLease    `json:"lease,omitempty"`
	LeaseHolder string          `json:"lease_holder,omitempty"`
	Timeline    []TimelineEntry `json:"timeline"`
	// CostUSD and Tokens are what the task's runner-mode agents have
	// spent on it, all runs together; Spend is the same per role, with
	// each role's cap.
	CostUSD float64 `json:"cost_usd"`
	Tokens  Tokens  `json:"tokens"`
	Spend   []Spend `json:"spend"`
	// PausedUntil is when a delivery waiting out an agent's rate limit
	// is sent again.
	PausedUntil time.Time `json:"paused_until,omitzero"`
	// Interrupted is set while a run a person interrupted waits for a
	// message or a redispatch.
	Interrupted *Interruption `json:"interrupted,omitempty"`
	LastError   string        `json:"last_error,omitempty"`
	Reason      string        `json:"reason,omitempty"`
	StartedAt   time.Time     `json:"started_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
}

// CIOff is State.CI of a task whose policy has no CI.
const CIOff = "off"

// Underlying is the turn the task is in: UnderlyingStatus when Status
// reports an open decision, else Status.
func (s State) Underlying() Status {
	if s.UnderlyingStatus != "" {
		return s.UnderlyingStatus
	}
	return s.Status
}

// ReportedStatus is the status a task in status raw reports while a
// decision of kind open is open (none: ""). In an agent's turn
// (dispatched, in_progress, ci_check, in_review) the task waits for the
// admins, not the agent: it reports awaiting_admin. A status that names
// its wait already (awaiting_approval, awaiting_lease, locked, suspended)
// or an ended task reports itself.
func ReportedStatus(raw Status, open decision.Kind) Status {
	if open == "" {
		return raw
	}
	switch raw {
	case StatusDispatched, StatusInProgress, StatusCICheck, StatusInReview:
		return StatusAwaitingAdmin
	}
	return raw
}

// Recovery is an agent's run that died (its worker died, or the
// delivery's attempt stopped) and is delivered again.
type Recovery struct {
	// Role and MsgID are the agent and the message its run works on.
	Role  amp.Role `json:"role"`
	MsgID string   `json:"msg_id"`
	// Session is the agent's session the retried run resumes; empty when
	// it starts afresh.
	Session string `json:"session,omitempty"`
	// Since is when the task learned of it; Note says what happened.
	Since time.Time `json:"since,omitzero"`
	Note  string    `json:"note,omitempty"`
}

// RecoveringStatus is the status a task in status raw reports while an
// agent's run is being recovered: recovering in an agent's turn
// (dispatched, in_progress, in_review), raw otherwise.
func RecoveringStatus(raw Status) Status {
	switch raw {
	case StatusDispatched, StatusInProgress, StatusInReview:
		return StatusRecovering
	}
	return raw
}

// TimelineEntry is one event of a task: a message, an ACK, a heartbeat, a
// decision or a status change.
type TimelineEntry struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"` // message, ack, heartbeat, decision, status, cost, rate_limit, warning
	MsgID  string    `json:"msg_id,omitempty"`
	Type   string    `json:"type,omitempty"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to,omitempty"`
	Status Status    `json:"status,omitempty"`
	Note   string    `json:"note,omitempty"`
}

// TimelineWarning is the kind of a timeline entry that warns of what
// ampflow could not read or use (an executor's report it could not read).
const TimelineWarning = "warning"

// MarshalJSON writes every list of the state as [] when it is empty,
// never null.
func (s State) MarshalJSON() ([]byte, error) {
	type plain State
	p := plain(s)
	p.Subtasks, p.DiffMismatches, p.Decided = orEmpty(p.Subtasks), orEmpty(p.DiffMismatches), orEmpty(p.Decided)
	p.Outbox, p.Timeline, p.Holders, p.Spend = orEmpty(p.Outbox), orEmpty(p.Timeline), orEmpty(p.Holders), orEmpty(p.Spend)
	return json.Marshal(p)
}

// orEmpty is s, or an empty slice for nil.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Holder is the agent that holds a role's work on a task: the API token
// that first ACKed (or answered) the role's current message. Another
// agent's ACK, reply or heartbeat is refused (CodeClaimed) until a new
// message to the role (a redispatch, the next subtask, a review asked
// again, also after a recovered heartbeat or an admin's choice to send
// again) hands the work on.
type Holder struct {
	Role  amp.Role `json:"role"`
	Agent string   `json:"agent"`
	// MsgID is the message it took, Since when.
	MsgID string    `json:"msg_id"`
	Since time.Time `json:"since"`
	// Unanswered is that message while it awaits the holder's reply: what
	// the holder's inbox shows with include=acked.
	Unanswered *amp.Message `json:"unanswered,omitempty"`
}

// HolderOf returns the holder of role's work, nil when nobody holds it.
func HolderOf(hs []Holder, role amp.Role) *Holder {
	for i := range hs {
		if hs[i].Role == role {
			return &hs[i]
		}
	}
	return nil
}

// Claimed is the refusal of agent's input for role's work on taskID
// when h holds it; nil when nobody holds it, agent is h's own, or the
// sender has no name or is an admin.
func Claimed(taskID string, h *Holder, agent string, admin bool) *Error {
	if h == nil || agent == "" || admin || h.Agent == agent {
		return nil
	}
	return Errorf(CodeClaimed, "claimed: %s holds the %s's work on task %s (it took %s at %s); %s's input is refused until a redispatch, a recovered heartbeat or an admin hands it on",
		h.Agent, h.Role, taskID, h.MsgID, h.Since.UTC().Format(time.RFC3339), agent)
}
