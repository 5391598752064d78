// Package activities holds the task workflow's side effects: git checks, CI
// status, the SSOT record, delivery to agents and admin notices. Every
// method of Activities is one Temporal activity with one struct in and one
// struct out; retried calls have no second effect.
package activities

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// Business failure types: non-retryable application errors.
const (
	ErrNotWorkTree     = "NotWorkTree"     // repo path missing or not a git work tree
	ErrBranchMissing   = "BranchMissing"   // branch not found locally nor on origin
	ErrProtectedBranch = "ProtectedBranch" // main, master or the default branch
	ErrCommitMissing   = "CommitMissing"   // commit_hash unknown to the repository
	ErrCIConfig        = "CIConfig"        // CI provider misconfigured: no token, unknown repository
	ErrRecordConflict  = "RecordConflict"  // an SSOT id reused with other content
	ErrDelivery        = "Delivery"        // an agent cannot be reached as configured
	// ErrBranchCheckedOut refuses a task for a runner-mode executor whose
	// branch is checked out outside ampflow's worktrees: the runner's
	// worktree could not check it out.
	ErrBranchCheckedOut = "BranchCheckedOut"
	// ErrNeedsActivity refuses a delivery tried as a local activity that
	// must run as a regular one: a command-mode agent runs for minutes,
	// heartbeating, and must be retried on another worker if this one
	// dies; a webhook agent may answer before its POST returns.
	ErrNeedsActivity = "NeedsActivity"
	// ErrNoPolicy refuses a new task on a worker that has no task policy.
	ErrNoPolicy = "NoPolicy"
	// ErrRateLimited: a runner hit its vendor's rate or usage limit. Its
	// DeliveryFailure says when the limit lifts (ResetAt, when the CLI
	// said); the task waits on a timer and delivers again, resuming the
	// session.
	ErrRateLimited = "RunnerRateLimit"
	// ErrModelConnection: a runner's connection to its model API dropped
	// mid-answer. Unlike the types above it is retried, by the activity's
	// policy, resuming the session.
	ErrModelConnection = "RunnerModelConnection"
)

// Activities carries the dependencies of every activity.
type Activities struct {
	Git      GitChecker
	CI       CIProvider
	Store    Recorder
	Delivery Deliverer
	Notifier notify.Notifier
	Log      *slog.Logger
	// Policy is what new tasks run by, from the worker's configuration;
	// TaskPolicy hands it to each task as it starts.
	Policy *task.Policy
	// Leases holds the tasks' branch leases.
	Leases BranchLeases
	// Marks keeps the runner checkouts being removed; nil keeps none.
	Marks WorktreeMarks
	// DecisionKey checks the signatures of admins' answers
	// (VerifyAnswer, AnswerChecker). Secret: it never leaves the worker.
	DecisionKey []byte
	// Refusals keeps the answers VerifyAnswer refuses; nil keeps none.
	Refusals ErrorLog
	// Pusher pushes task branches (delivery.push); nil when off.
	Pusher *Pusher
	// Pulls keeps the tasks' pull requests (delivery.pull_request); nil
	// when off.
	Pulls *PullRequests
	// CIRounds keeps each task's CI rounds (ssot.SaveCIRound); nil keeps
	// none.
	CIRounds ssot.FileKeeper
	// Host is this worker's runner host (runner.host) when it runs agent
	// CLIs, else empty; Fleet reads when hosts were last seen. Both serve
	// RunnerHost.
	Host  string
	Fleet HostReader
}

// AgentDelivery says how one role receives its messages.
type AgentDelivery struct {
	Mode       string
	Command    []string      // argv for config.AgentModeCommand
	WebhookURL string        // for config.AgentModeWebhook
	Timeout    time.Duration // how long a command may run; zero means config.DefaultAgentTimeout
	// Env lets a command see more than the base environment (see
	// childEnv): NAME passes the worker's NAME, NAME=value sets it.
	Env []string
	// WebhookSecret signs each webhook delivery; empty sends it unsigned.
	WebhookSecret string
	// Runner, Model and IdleTimeout configure a config.AgentModeRunner
	// agent (docs/runners.md); it works under WorkDir (data_dir):
	// worktrees/, sessions/, pids/. Its cost cap comes with each delivery
	// (DeliverInput.MaxCostUSD), from the task's policy.
	Runner      string
	Model       string
	IdleTimeout time.Duration
	WorkDir     string
	// Sandbox confines each run of a runner (agents.<role>.sandbox, on
	// unless off; docs/sandbox.md).
	Sandbox bool
	// Accounts are a runner's credentials, tried in order
	// (agents.<role>.accounts); none: Env alone.
	Accounts []config.Account
}

// GitChecker verifies what agents say against the repository.
type GitChecker interface {
	CheckBranch(ctx context.Context, in CheckBranchInput) (CheckBranchResult, error)
	CheckResult(ctx context.Context, in CheckResultInput) (CheckResultOutput, error)
	// Local is the local git directory of a task's repository (see
	// (*Git).Local).
	Local(ctx context.Context, repo string, fetch bool) (string, error)
}

// Recorder keeps the SSOT record of a task.
type Recorder interface {
	Record(ctx context.Context, in RecordInput) (RecordResult, error)
}

// CIProvider reads the CI state of a commit.
type CIProvider interface {
	Status(ctx context.Context, in CIStatusInput) (CIStatusResult, error)
}

// Deliverer hands a message to the agent it is addressed to.
type Deliverer interface {
	Deliver(ctx context.Context, in DeliverInput) (DeliverResult, error)
}

// CheckBranchInput asks whether a task may be dispatched to repo@branch.
type CheckBranchInput struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	// Create makes a missing branch at the default branch's head
	// instead of refusing it.
	Create bool `json:"create,omitempty"`
}

// CheckBranchResult describes the repository.
type CheckBranchResult struct {
	DefaultBranch string `json:"default_branch"`
	Head          string `json:"head"` // the branch's current commit
	// DefaultHead is the default branch's current commit (local first,
	// then origin's); empty when the branch has none.
	DefaultHead string `json:"default_head,omitempty"`
	// GitHubRepo is HOST/OWNER/NAME of the repository whose checks count:
	// ci.github.repo when set, else origin's when it is on GitHub, else
	// empty. The task keeps it, so a remote changed later changes nothing.
	GitHubRepo string `json:"github_repo,omitempty"`
}

// CheckResultInput asks git about an executor's claimed result.
type CheckResultInput struct {
	TaskID  string          `json:"task_id"`
	MsgID   string          `json:"msg_id"` // the task_result
	Repo    string          `json:"repo"`
	Branch  string          `json:"branch"`
	Commit  string          `json:"commit,omitempty"` // commit_hash; empty means the branch head
	Claimed amp.DiffSummary `json:"claimed"`
	// DefaultBranch is CheckBranchResult.DefaultBranch of the task; empty
	// means find it again.
	DefaultBranch string `json:"default_branch,omitempty"`
	// GitHubRepo is CheckBranchResult.GitHubRepo of the task: the compare
	// URL's repository. Empty means none, so the diff goes to the SSOT.
	GitHubRepo string `json:"github_repo,omitempty"`
	// Base is the default branch's head recorded when the plan was
	// approved. When set, the diff is Base..commit, and a commit that
	// does not descend from it is a Violation: moving the default branch
	// later hides nothing from the review.
	Base string `json:"base,omitempty"`
}

// CheckResultOutput is what git shows.
type CheckResultOutput struct {
	Commit string          `json:"commit"` // full hash
	Actual amp.DiffSummary `json:"actual"`
	// Mismatches lists where the claimed diff_summary differs from git.
	Mismatches []string `json:"mismatches,omitempty"`
	// Violation is non-empty when the commit is on main/master/default or
	// not reachable from the branch: a branch_violation.
	Violation string `json:"violation,omitempty"`
	// NoCommit is set with Violation when the branch head is still the
	// pinned base: the executor committed nothing.
	NoCommit bool `json:"no_commit,omitempty"`
	// DiffURL is a GitHub compare URL or the path of a diff file in the SSOT.
	DiffURL string `json:"diff_url"`
}

// CIState is the rolled-up state of a commit's CI.
type CIState string

// CI states.
const (
	CIPending CIState = "pending"
	CIPassed  CIState = "passed"
	CIFailed  CIState = "failed"
	CINone    CIState = "none" // no provider
)

// CIStatusInput names the commit whose CI to read.
type CIStatusInput struct {
	TaskID string `json:"task_id"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	// GitHubRepo is CheckBranchResult.GitHubRepo of the task: where the
	// github provider reads checks. The repository's remotes are not read
	// again, since an executor can change them.
	GitHubRepo string `json:"github_repo,omitempty"`
	// Round is the task's CI round the reading belongs to (from 1); with
	// Activities.CIRounds set, each reading is kept as that round's
	// (ssot.CIRound). Zero keeps nothing.
	Round   int    `json:"round,omitempty"`
	Subtask string `json:"subtask,omitempty"`
	// Last says the task's CI deadline has come: a pending reading ends
	// the round as timed out.
	Last bool `json:"last,omitempty"`
}

// CIStatusResult is a commit's CI state.
type CIStatusResult struct {
	State   CIState           `json:"state"`
	Failing []string          `json:"failing,omitempty"` // names of failing checks
	Checks  map[string]string `json:"checks,omitempty"`  // check name → state
	Detail  string            `json:"detail,omitempty"`  // e.g. the tail of a command's output
	// LogURL is where the provider shows a failing check's log, when it
	// gives one.
	LogURL string `json:"log_url,omitempty"`
	// Commit is the commit read, in full; LogKept says its whole log is
	// kept beside the task's records (ssot.CILogName).
	Commit  string `json:"commit,omitempty"`
	LogKept bool   `json:"log_kept,omitempty"`
}

// RecordEntry is one record to keep in the SSOT.
type RecordEntry struct {
	ID   string          `json:"id"` // msg_id, or a decision/event id
	Kind ssot.RecordKind `json:"kind"`
	Body json.RawMessage `json:"body"`
	// RecordedAt is when the caller saw the record (workflow time); zero
	// means the store's clock. Idempotency ignores it.
	RecordedAt time.Time `json:"recorded_at,omitzero"`
}

// RecordInput writes records of a task, and its current state when Task is set.
type RecordInput struct {
	TaskID  string        `json:"task_id"`
	Entries []RecordEntry `json:"entries,omitempty"`
	// Task is the task's view (task.State as JSON).
	Task json.RawMessage `json:"task,omitempty"`
	// Rev orders the states of a task: one never replaces a state of a
	// higher Rev. The workflow counts its record batches.
	Rev int64 `json:"rev,omitempty"`
	// Release, when set, ends the task's branch lease held directly in
	// the store (task.BranchLease.Direct) in the batch's transaction: a
	// task's end writes its last state and gives up its branch at once.
	// Its ReleasedAt is the workflow's clock, so a run again after a lost
	// workflow task writes the same row.
	Release *BranchLeaseInput `json:"release,omitempty"`
}

// RecordResult says how many entries were new and, for a batch with a
// Release, whether the lease ended with it. Not Released, nothing of the
// batch is written: the lease is no longer held directly in the store (a
// lease workflow adopted it for the task queued behind), so the release
// goes through the lease system (ReleaseBranchLease) and the batch is
// written again without it.
type RecordResult struct {
	Written  int  `json:"written"`
	Released bool `json:"released,omitempty"`
}

// DeliverInput hands one message to its recipient.
type DeliverInput struct {
	Message amp.Message `json:"message"`
	// Repo is the task's repository, a command-mode agent's working
	// directory; empty in histories from before it.
	Repo string `json:"repo,omitempty"`
	// Branch is the task's branch, where a runner executor works.
	Branch string `json:"branch,omitempty"`
	// Commit is the result a review request is about, Description and
	// Criteria the plan's: what a runner reviewer is told.
	Commit      string   `json:"commit,omitempty"`
	Description string   `json:"description,omitempty"`
	Criteria    []string `json:"criteria,omitempty"`
	// MaxCostUSD is what is left of a runner's cap on the task; 0 is no
	// cap. Sessions are the role's sessions' last running totals, so a
	// resumed Codex session's earlier turns do not count against it.
	MaxCostUSD float64           `json:"max_cost_usd,omitempty"`
	Sessions   []task.UsageInput `json:"sessions,omitempty"`
	// Resume, set, runs a parked runner again with its call's answer.
	Resume *Resume `json:"resume,omitempty"`
	// Rehome, set, is a runner's first run on a host that did not hold
	// the task before.
	Rehome *Rehome `json:"rehome,omitempty"`
	// Priority orders the runs waiting for a worker's runner slots: the
	// higher first (the task's priority).
	Priority int `json:"priority,omitempty"`
}

// DeliveryFailure is the detail of an ErrDelivery error: what went wrong
// in one line, and the end of the agent's stderr (secrets masked).
type DeliveryFailure struct {
	Summary string `json:"summary"`
	Stderr  string `json:"stderr,omitempty"`
	// Class sorts a runner's failure: FailureMaxCost, or the runner's
	// rate_limit, auth or crash; empty for other deliveries.
	Class string `json:"class,omitempty"`
	// ResetAt is when a rate limit lifts, when the CLI said.
	ResetAt time.Time `json:"reset_at,omitzero"`
}

// ErrParked ends a runner's delivery whose tool call still waits for the
// admins past tools.ask_timeout: the CLI has stopped (Claude Code on its
// hook's "defer", the others stopped by the runner) and its session is
// kept. The detail is a Parked; the task waits for the call's decision
// without any process, then delivers again with DeliverInput.Resume.
const ErrParked = "RunnerParked"

// EnvParkFile names, in a runner's environment, the file the tool hook
// writes when it parks a call (runner.Spec.ParkFile).
const EnvParkFile = "AMPFLOW_PARK_FILE"

// Parked is the detail of an ErrParked error.
type Parked struct {
	ToolCallID string `json:"tool_call_id"`
	SessionID  string `json:"session_id,omitempty"`
}

// ErrInterrupted ends a runner's delivery whose run a person interrupted
// (ampflow task interrupt): its process group is gone, its session and
// worktree are kept. The detail is an Interrupted; the task waits without
// any process for a message (ampflow task say) or a redispatch, then
// delivers again with DeliverInput.Resume.Interrupted.
const ErrInterrupted = "RunnerInterrupted"

// Interrupted is the detail of an ErrInterrupted error: who interrupted,
// the interrupt's id in the store (a message sent after it has a higher
// one) and the session to resume.
type Interrupted struct {
	By        string `json:"by"`
	ID        int64  `json:"id"`
	SessionID string `json:"session_id,omitempty"`
}

// Resume runs a parked runner again once its tool call is answered: the
// session goes on, told the answer; the hook then finds the call decided.
// With Interrupted, it resumes an interrupted run: the messages sent to
// the task since are its prompt.
type Resume struct {
	Interrupted bool   `json:"interrupted,omitempty"`
	ToolCallID  string `json:"tool_call_id"`
	// SessionID is the parked run's session; empty, the one kept on disk.
	SessionID string `json:"session_id,omitempty"`
	// Decision is allow or deny; By who answered, Note their note or why
	// the call was denied.
	Decision string `json:"decision"`
	By       string `json:"by,omitempty"`
	Note     string `json:"note,omitempty"`
	// Destination is host:port when the parked call is a connection the
	// egress proxy asked about (kind network), not a tool call the agent
	// made.
	Destination string `json:"destination,omitempty"`
}

// FailureMaxCost is the DeliveryFailure.Class of a run stopped at the
// task's cost cap.
const FailureMaxCost = "max_cost"

// DeliverResult says how the message went out.
type DeliverResult struct {
	Mode string `json:"mode"` // pull, command, webhook
}
