// Package task is the public model of a task workflow: its statuses, inputs,
// handler names and payloads, decisions and the state it reports. Clients
// (CLI, HTTP API, chat) and activities import it; it holds no workflow code.
package task

import (
	"encoding/json"
	"regexp"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
)

// WorkflowType is the registered name of the task workflow.
const WorkflowType = "Task"

var idPattern = regexp.MustCompile(`^T-[0-9]{4}-[0-9]{3,}$`)

// ValidID reports whether id has the T-YYYY-NNN form of a task_id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// WorkflowID returns the workflow ID of a task: the task_id itself.
func WorkflowID(taskID string) string { return taskID }

// Status is where a task stands. The names are part of the interface:
// the CLI, the HTTP API and the AmpStatus search attribute use them.
type Status string

// Task statuses.
const (
	StatusAwaitingApproval Status = "awaiting_approval"
	// StatusAwaitingLease: approved, waiting for its branch's lease, which
	// another task holds.
	StatusAwaitingLease Status = "awaiting_lease"
	StatusDispatched    Status = "dispatched"
	StatusInProgress    Status = "in_progress"
	StatusCICheck       Status = "ci_check"
	StatusInReview      Status = "in_review"
	// StatusRecovering: the worker running an agent's run died, or the
	// run's attempt stopped, and the run is delivered again; it lasts
	// until the retried run starts (State.Recovering says which run).
	StatusRecovering    Status = "recovering"
	StatusAwaitingAdmin Status = "awaiting_admin"
	StatusLocked        Status = "locked"
	StatusSuspended     Status = "suspended"
	StatusDone          Status = "done"
	StatusTerminated    Status = "terminated"
)

// Statuses lists every status in lifecycle order.
func Statuses() []Status {
	return []Status{StatusAwaitingApproval, StatusAwaitingLease, StatusDispatched, StatusInProgress, StatusCICheck,
		StatusInReview, StatusRecovering, StatusAwaitingAdmin, StatusLocked, StatusSuspended, StatusDone, StatusTerminated}
}

// Terminal reports whether no further change can happen.
func (s Status) Terminal() bool { return s == StatusDone || s == StatusTerminated }

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses() {
		if s == v {
			return true
		}
	}
	return false
}

// Search attributes upserted by the workflow when their value changes.
var (
	// AttrStatus is the task's Status as AttrStatusOf gives it.
	AttrStatus = temporal.NewSearchAttributeKeyKeyword("AmpStatus")
	// AttrRisk is the task's risk_level.
	AttrRisk = temporal.NewSearchAttributeKeyKeyword("AmpRisk")
	// AttrRejectCount is the cumulative reject_count.
	AttrRejectCount = temporal.NewSearchAttributeKeyInt64("AmpRejectCount")
	// AttrRepo is the repository path.
	AttrRepo = temporal.NewSearchAttributeKeyKeyword("AmpRepo")
)

// Handling is how a gate is passed: automatically or by an admin.
type Handling string

// Handlings, from looser to stricter.
const (
	HandlingAuto  Handling = "auto"
	HandlingAdmin Handling = "admin"
)

// Stricter returns the stricter of h and o; an empty o leaves h.
func (h Handling) Stricter(o Handling) Handling {
	if h == HandlingAdmin || o == HandlingAdmin {
		return HandlingAdmin
	}
	return HandlingAuto
}

// RiskHandling maps each risk level to a minimum handling.
type RiskHandling struct {
	Low    Handling `json:"low"`
	Medium Handling `json:"medium"`
	High   Handling `json:"high"`
}

// For returns the handling of a risk level (admin for an unknown one).
func (r RiskHandling) For(risk amp.Risk) Handling {
	switch risk {
	case amp.RiskLow:
		return r.Low
	case amp.RiskMedium:
		return r.Medium
	case amp.RiskHigh:
		return r.High
	}
	return HandlingAdmin
}

// Policy is the part of the configuration a task runs by. It is fixed when
// the task starts, so a running task is not changed by a config edit.
type Policy struct {
	PlanApproval  RiskHandling `json:"plan_approval"`
	FinalApproval RiskHandling `json:"final_approval"`
	// AckTimeouts are the default ACK deadlines per message type; a
	// message's own ack_timeout_sec overrides them.
	AckTimeouts      map[amp.Type]time.Duration `json:"ack_timeouts"`
	HeartbeatTimeout time.Duration              `json:"heartbeat_timeout"`
	MaxRejects       int                        `json:"max_rejects"`
	MaxCIRounds      int                        `json:"max_ci_rounds"`
	MinConfidence    float64                    `json:"min_confidence"`
	// CI is false when no CI provider is configured: results go straight
	// to review.
	CI             bool          `json:"ci"`
	CIPollInterval time.Duration `json:"ci_poll_interval"`
	CITimeout      time.Duration `json:"ci_timeout"`
	// Admins are the names whose decisions count. Empty means nobody may
	// decide; AnyAdmin ("*") lets any named person decide.
	Admins []string `json:"admins"`
	// EscalationAdmins may decide a decision once it has escalated
	// (Decisions.EscalateAfter passed without an answer).
	EscalationAdmins []string `json:"escalation_admins,omitempty"`
	// Decisions is the decision engine's policy: quorum, reminder,
	// escalation and expiry.
	Decisions decision.Policy `json:"decisions"`
	// StatusUpdates also posts every status change.
	StatusUpdates bool `json:"status_updates"`
	// LeaseWait bounds how long a task waits for its branch's lease
	// before the admins are asked whether it should go on waiting.
	LeaseWait time.Duration `json:"lease_wait,omitempty"`
	// Runners is set when the executor or the reviewer runs in runner
	// mode: the task's worktrees are cleaned up as it ends.
	Runners bool `json:"runners,omitempty"`
	// HostTimeout is how long a run waits for the runner host that holds
	// the task to take it before the task re-homes (runner.host_timeout);
	// 0 means two minutes.
	HostTimeout time.Duration `json:"host_timeout,omitempty"`
	// MaxCostUSD caps what each runner-mode role may spend on the task
	// (agents.<role>.max_cost_usd); a role without an entry has no cap.
	MaxCostUSD map[amp.Role]float64 `json:"max_cost_usd,omitempty"`
	// Delivery is what the task does on GitHub; zero does nothing.
	Delivery Delivery `json:"delivery,omitzero"`
}

// AckTimeout returns the default ACK deadline of a message type.
func (p Policy) AckTimeout(t amp.Type) time.Duration {
	if d, ok := p.AckTimeouts[t]; ok && d > 0 {
		return d
	}
	return time.Duration(amp.DefaultAckTimeout(t)) * time.Second
}

// AnyAdmin in Policy.Admins (the configuration's `admins: ["*"]`) lets any
// named person decide.
const AnyAdmin = "*"

// IsAdmin reports whether name may decide: it is one of Admins, or Admins
// holds AnyAdmin. No admins means nobody.
func (p Policy) IsAdmin(name string) bool {
	if name == "" {
		return false
	}
	for _, a := range p.Admins {
		if a == name || a == AnyAdmin {
			return true
		}
	}
	return false
}

// MayDecide reports whether name may answer a decision: an admin, or a
// member of the escalation group once the decision has escalated.
func (p Policy) MayDecide(name string, escalated bool) bool {
	if p.IsAdmin(name) {
		return true
	}
	return escalated && name != "" && slices.Contains(p.EscalationAdmins, name)
}

// Input starts a task workflow.
type Input struct {
	TaskID string `json:"task_id"`
	// Plan is the coordinator's plan: the task_dispatch payload that each
	// subtask's dispatch is built from.
	Plan amp.TaskDispatch `json:"plan"`
	// Handling lets a coordinator ask for stricter plan approval than the
	// risk level's minimum; never looser.
	Handling    Handling `json:"handling,omitempty"`
	Coordinator string   `json:"coordinator,omitempty"`
	// Origin is the tracker's item the task came from; nil for none.
	Origin *Origin `json:"origin,omitempty"`
	// CreateBranch makes the plan's branch, at the default branch's
	// head, when the repository lacks it, instead of refusing the task.
	CreateBranch bool `json:"create_branch,omitempty"`
	// Priority orders the task's runner runs in a worker's queue for its
	// slots (runner.slots): the higher first, from MinPriority to
	// MaxPriority; 0 by default.
	Priority int `json:"priority,omitempty"`
	// Queue, when set, merges the task's branch into Queue.Target
	// through the target's merge queue after its final approval, instead
	// of ending there (local repositories).
	Queue *QueueSpec `json:"queue,omitempty"`
	// Policy is what the task runs by. The task sets it when it starts,
	// from the worker's configuration and Handling: a policy a client puts
	// here is ignored.
	Policy Policy `json:"policy"`
	// Restarts counts the refused starts under this task id before this
	// one (the client's Start reuses the id of a refused start): the
	// task's plan record and state revisions come after theirs.
	Restarts int `json:"restarts,omitempty"`
	// Carried is the whole state of the previous run after a
	// continue-as-new; empty on a fresh start.
	Carried json.RawMessage `json:"carried,omitempty"`
	// RequestKey is the starting request's idempotency key scoped to its
	// caller (workflows.RequestKey). It is not part of the workflow's
	// input: the client keeps a digest of it in the task's memo.
	RequestKey string `json:"-"`
}

// The bounds of Input.Priority.
const (
	MinPriority = -100
	MaxPriority = 100
)

// ErrRefused is the error type of the failure a task workflow ends with
// when it refuses its start (a branch that is missing or protected, a
// plan it cannot dispatch, no policy to run by). Its details are a
// Refusal. Temporal shows the workflow as failed, and the client's Start
// takes its id again.
const ErrRefused = "TaskRefused"

// Refusal is what a refused start ends with: why, and the input field at
// fault when one is.
type Refusal struct {
	Reason string `json:"reason"`
	// Field is the input's field at fault (plan.branch, say); empty when
	// the refusal is not about one.
	Field string `json:"field,omitempty"`
	// Restarts is the refused start's Input.Restarts.
	Restarts int `json:"restarts,omitempty"`
}

// Result is what a finished task workflow returns.
type Result struct {
	TaskID      string   `json:"task_id"`
	Status      Status   `json:"status"`
	Reason      string   `json:"reason,omitempty"`
	Rounds      int      `json:"rounds"`
	RejectCount int      `json:"reject_count"`
	CIRounds    int      `json:"ci_rounds"`
	MsgIDs      []string `json:"msg_ids"`
	// Merged is the target's head the merge queue moved it to; empty
	// for a task without a queue.
	Merged string `json:"merged,omitempty"`
}

// Names of the workflow's handlers.
const (
	// UpdateSubmit takes everything agents send: task_result,
	// review_verdict and ACK records. Its update ID is the msg_id.
	UpdateSubmit = "submit"
	// UpdateDecide applies an admin's choice on the pending decision.
	UpdateDecide = "decide"
	// UpdateCancel ends a task at a coordinator's request.
	UpdateCancel = "cancel"
	// UpdateReplan replaces the remaining subtasks.
	UpdateReplan = "replan"
	// SignalHeartbeat is an agent's progress note; it restarts the
	// heartbeat timer.
	SignalHeartbeat = "heartbeat"
	// QueryState returns the State.
	QueryState = "state"
	// SignalLeaseGranted tells a task waiting for its branch's lease that
	// the lease is now its own: LeaseGrant.
	SignalLeaseGranted = "lease_granted"
)

// BranchLease is the lease a task holds on its branch, the resource key
// BranchLeaseKey(repo, branch), held under the task's id.
type BranchLease struct {
	LeaseID     string    `json:"lease_id"`
	ResourceKey string    `json:"resource_key"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Direct marks a lease taken directly in the store (no lease workflow
	// held the key); Version is the version the task last wrote there.
	Direct     bool      `json:"direct,omitempty"`
	Version    int64     `json:"version,omitempty"`
	AcquiredAt time.Time `json:"acquired_at,omitzero"`
}

// LeaseGrant is the payload of SignalLeaseGranted.
type LeaseGrant struct {
	Lease BranchLease `json:"lease"`
}

// BranchLeaseKey is the resource key of a branch: repo:<repo>:<branch>.
func BranchLeaseKey(repo, branch string) string { return "repo:" + repo + ":" + branch }

// SubmitInput carries one AMP message or ACK record exactly as received.
type SubmitInput struct {
	Raw json.RawMessage `json:"raw"`
	// By is the agent that sent it: the name of the API token it came
	// with, set by the API from the token and never from the body. Empty
	// when there is no token (a worker's own delivery, an open API): such
	// a record neither claims the work nor is refused as claimed.
	By string `json:"by,omitempty"`
	// Admin is true for an admin's token, which is never refused as
	// claimed.
	Admin bool `json:"admin,omitempty"`
	// At and Signature sign who sent it (By, Admin) with the record, as
	// an answer's (SignedAs): workflows.Client.Submit signs every
	// submission, and the task takes no other, so a raw Temporal update
	// can neither name an agent nor claim an admin's or the worker's
	// standing.
	decision.Signed
}

// SignedAs is the answer a submission's signature covers
// (decision.SignedAs): the record and who sent it.
func (in SubmitInput) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(UpdateSubmit, in, in.By, "")
}

// SubmitResult says how the task took a submission.
type SubmitResult struct {
	MsgID string `json:"msg_id"`
	// Duplicate is true when the task had accepted the same record before
	// under another update (after a continue-as-new, say); it had no further
	// effect. A plain resend is answered with the first send's result.
	Duplicate bool   `json:"duplicate,omitempty"`
	Status    Status `json:"status"`
	// Warnings name each way a task_result's diff_summary differs from
	// what git shows for its commit: what the reviewer will be told. The
	// result is taken all the same.
	Warnings []string `json:"warnings,omitempty"`
}

// HeartbeatInput is an agent's progress note.
type HeartbeatInput struct {
	From amp.Role `json:"from"`
	Note string   `json:"note,omitempty"`
	// Recovered says the agent restarted after a crash and lost its work:
	// a task waiting for its reply sends the message again at once, as
	// for a stale heartbeat whose admin chose to send again.
	Recovered bool `json:"recovered,omitempty"`
	// Recovering says that ampflow knows the role's run died (its worker
	// died, or its attempt stopped) and delivers it again: the task
	// reports recovering until the retried run sends its first heartbeat.
	// Sent by ampflow's workers only, signed.
	Recovering *Recovery `json:"recovering,omitempty"`
	// Account says the note tells what happened to the run's account (it
	// rests, the run goes on with another): it is always sent, and kept
	// as a timeline entry of its own (kind account) that later
	// heartbeats do not overwrite.
	Account bool `json:"account,omitempty"`
	// By and Admin are who sent it, as for SubmitInput: a heartbeat from
	// another agent than the role's holder is refused (CodeClaimed), a
	// recovered one excepted, which hands the work on.
	By    string `json:"by,omitempty"`
	Admin bool   `json:"admin,omitempty"`
	// At and Signature sign the heartbeat as a submission's: the task
	// takes a recovered or an admin's heartbeat only signed
	// (workflows.Client.Heartbeat signs every one).
	decision.Signed
}

// SignedAs is the answer a heartbeat's signature covers
// (decision.SignedAs).
func (in HeartbeatInput) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(SignalHeartbeat, in, in.By, "")
}

// Privileged reports whether the heartbeat asks for more than a sign of
// life: a redispatch (Recovered), a dead run's recovery (Recovering) or
// an admin's pass over the claim.
func (in HeartbeatInput) Privileged() bool {
	return in.Recovered || in.Admin || in.Recovering != nil
}

// CancelInput ends a task; the reason is required. It is taken only
// signed with the decision key (workflows.Client.Cancel signs it): At and
// Signature as an answer's (SignedAs).
type CancelInput struct {
	Reason string `json:"reason"`
	By     string `json:"by"`
	decision.Signed
}

// SignedAs is the answer cancel's signature covers (decision.SignedAs).
func (in CancelInput) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(UpdateCancel, in, in.By, in.Reason)
}

// ReplanInput replaces the subtasks from the current one on. It is taken
// only signed with the decision key, as CancelInput.
type ReplanInput struct {
	Subtasks []amp.Subtask `json:"subtasks"`
	By       string        `json:"by"`
	Note     string        `json:"note,omitempty"`
	decision.Signed
}

// SignedAs is the answer replan's signature covers (decision.SignedAs).
func (in ReplanInput) SignedAs() (decision.Answer, error) {
	return decision.SignedAs(UpdateReplan, in, in.By, in.Note)
}

// ChangeResult is what cancel and replan return.
type ChangeResult struct {
	Status Status `json:"status"`
}

// AttrStatusOf is the value of AttrStatus for a task in status s: s
// itself, except that the agents' turns (in_progress, ci_check,
// in_review, and recovering over them) are dispatched. The visibility row then changes when a task
// starts or stops waiting for a person, or ends, not at every turn; the
// SSOT (GET /v1/tasks) has the exact status.
func AttrStatusOf(s Status) Status {
	switch s {
	case StatusInProgress, StatusCICheck, StatusInReview, StatusRecovering:
		return StatusDispatched
	}
	return s
}
