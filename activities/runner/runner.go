// Package runner runs the coding-agent CLIs (Claude Code, Codex, Gemini CLI
// and OpenCode, and any agent that speaks the Agent Client Protocol)
// headless, one process group per run, and turns each CLI's JSON event
// stream into the same Events.
//
// Run starts the CLI a Spec describes, calls back for every Event, watches it
// (no first event, silence, no exit after the final result, wall clock, cost
// cap) and kills its whole process group when a watchdog fires. The Outcome
// says how the run ended, with the session id to resume it, its final text,
// token and dollar usage, and a failure class (rate limit, auth, crash).
// Reap kills what a crashed worker left behind.
//
// The worktree functions give each run a checkout of its own (a clone that
// reads the repository's objects), bring its branch back, and commit
// whatever a run leaves uncommitted before the checkout goes.
package runner

import (
	"context"
	"encoding/json"
	"time"
)

// The runners this package knows, as Spec.Runner names them.
const (
	Claude   = "claude"
	Codex    = "codex"
	Gemini   = "gemini"
	OpenCode = "opencode"
	// ACP is any agent that speaks the Agent Client Protocol on its
	// standard input and output; Spec.Command is its command line.
	ACP = "acp"
)

// Runners lists every runner name Run accepts.
var Runners = []string{Claude, Codex, Gemini, OpenCode, ACP}

// Defaults for the Spec fields left zero.
const (
	DefaultFirstEventTimeout = 60 * time.Second
	DefaultIdleTimeout       = 15 * time.Minute
	DefaultExitGrace         = 30 * time.Second
)

// Spec describes one run of an agent CLI.
type Spec struct {
	// Runner picks the CLI's argument and stream format: one of Runners.
	Runner string
	// Command is the binary and any fixed arguments placed before the ones
	// the runner adds; empty means []string{Runner}, found on the PATH of Env.
	Command []string
	// Model is passed to the CLI when set.
	Model string
	// Dir is the working directory, normally a worktree from AddTaskWorktree.
	Dir string
	// Prompt is the user turn.
	Prompt string
	// SystemPrompt is added to the CLI's own system prompt through its
	// option for that; no file is written into Dir.
	SystemPrompt string
	// SessionID, when set, resumes that session instead of starting one.
	SessionID string
	// Env is the child's entire environment, NAME=value each; nothing of the
	// caller's environment is inherited. Values are masked in Outcome.Stderr.
	Env []string
	// Timeout bounds the run's wall clock; 0 means no bound.
	Timeout time.Duration
	// IdleTimeout bounds the silence between two events; 0 means
	// DefaultIdleTimeout, a negative value no bound.
	IdleTimeout time.Duration
	// FirstEventTimeout bounds the wait for the first event; 0 means
	// DefaultFirstEventTimeout.
	FirstEventTimeout time.Duration
	// ExitGrace bounds the wait for the CLI to exit after its final result
	// event; 0 means DefaultExitGrace.
	ExitGrace time.Duration
	// MaxCostUSD stops the run once its cost passes this many dollars (the
	// CLI's own figure, or PriceUSD's); 0 means no cap. Claude also gets it
	// as --max-budget-usd.
	MaxCostUSD float64
	// PriceUSD prices token usage for CLIs that report no cost; nil leaves
	// such runs unpriced.
	PriceUSD func(Usage) float64
	// PIDDir, when set, holds a pid file for the run while it lives, so Reap
	// can kill it after a crash of the caller.
	PIDDir string
	// Owner, when set, is kept in the pid file: whose run it is.
	Owner *RunOwner
	// Settings is Claude Code's --settings, as JSON (the tool policy's
	// hook); the other runners ignore it.
	Settings string
	// CodexHooks is Codex's hooks table as a TOML inline value (the tool
	// policy's hook), given as -c hooks=… with --dangerously-bypass-hook-trust:
	// ampflow wrote the hook, and codex exec has no way to trust it
	// otherwise (an untrusted hook is skipped without a word). The other
	// runners ignore it.
	CodexHooks string
	// ParkFile, when set, is where the tool policy's hook writes a Park
	// when it parks a tool call (the hook gets the path as
	// AMPFLOW_PARK_FILE). Run removes a stale one before it starts; once
	// the file is there, a CLI that does not stop by itself (Claude Code
	// does, on its hook's "defer") has its group stopped, and
	// Outcome.Parked holds the Park. The file is removed once the run is
	// over, which ends a hook still holding the call.
	ParkFile string
	// Args go after Command and before the runner's own arguments: options
	// of the CLI itself, such as the MCP server's (MCPConfig.Args).
	Args []string
	// Sandbox, when set, confines the run (bubblewrap); nil runs it as the
	// worker's user with nothing hidden.
	Sandbox *Sandbox
	// MCPServers are given to an ACP agent in session/new and
	// session/load (MCP.ACPServer); the other runners ignore them.
	MCPServers []MCPServer
	// Permission decides an ACP agent's session/request_permission (the
	// tool policy); nil allows every call, as the other runners run with
	// their approvals bypassed. The other runners ignore it.
	Permission func(ctx context.Context, req PermissionRequest) PermissionAnswer
	// Stop, when set, stops the run for the reason it sends (the model
	// relay's Meter at the cost cap).
	Stop <-chan Reason
	// Secrets are values masked in the run's events and Outcome.Stderr
	// beside its environment's: the keys its model relay holds, which the
	// run's environment does not.
	Secrets []string
	// Messages are user turns for the running CLI: a runner that takes
	// input mid-run (TakesInput) writes each to its input as it comes; the
	// others never read it, and the caller queues them for the next run.
	Messages <-chan Message
}

// Message is a user turn sent to a running CLI (Spec.Messages).
type Message struct {
	Text string
	// Taken, buffered by the sender, gets true once the turn is written to
	// the CLI's input, false when the run takes no more input (it has sent
	// its last result, or it is ending).
	Taken chan<- bool
}

// TakesInput reports whether runner takes user turns while it runs
// (Spec.Messages): Claude Code, whose input is a stream of JSON turns.
func TakesInput(runner string) bool {
	f, err := formatOf(runner)
	if err != nil {
		return false
	}
	_, ok := f.(inputFormat)
	return ok
}

// EventKind names what an Event reports.
type EventKind string

// The kinds of Event.
const (
	// EventSession carries the CLI's session id, once known.
	EventSession EventKind = "session"
	// EventText is assistant text.
	EventText EventKind = "text"
	// EventToolCall is a tool call: Tool, ToolID, Input, and File when it
	// names one.
	EventToolCall EventKind = "tool_call"
	// EventToolResult is a tool's output (Text) for ToolID; IsError when the
	// tool failed, and ExitCode when the tool ran a command and the CLI
	// says how it exited.
	EventToolResult EventKind = "tool_result"
	// EventUsage is usage of one model step, added to the run's total.
	EventUsage EventKind = "usage"
	// EventResult is the CLI's final result: Text, IsError, and Usage as the
	// run's total when the CLI reports one.
	EventResult EventKind = "result"
	// EventPlan is the agent's plan (an ACP agent's), its entries one a
	// line in Text as "[status] content".
	EventPlan EventKind = "plan"
	// EventError is an error the CLI reported (Text); the run may go on, as
	// when the CLI retries a rate-limited request.
	EventError EventKind = "error"
)

// Event is one decoded event of a CLI's stream.
type Event struct {
	Kind      EventKind
	SessionID string
	Text      string
	Tool      string // the CLI's name for the tool
	ToolID    string
	Input     json.RawMessage // the tool call's input as JSON
	File      string          // the file a tool call reads or writes, when it names one
	IsError   bool
	// ExitCode is a command's exit status on a tool result, when the CLI
	// reports one; nil otherwise.
	ExitCode *int
	Usage    Usage
	Raw      json.RawMessage // the line it was decoded from
}

// Usage counts tokens and money.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	CachedTokens int64 // input tokens served from a cache, included in InputTokens where the CLI counts them so
	CostUSD      float64
	// CostReported is true when CostUSD comes from the CLI (Claude Code,
	// OpenCode) or from Spec.PriceUSD, false when nothing priced the run.
	CostReported bool
	// SessionTotal is true when the CLI reports the whole session's running
	// total rather than this run's (Codex, whose resumed runs count earlier
	// turns too).
	SessionTotal bool
}

func (u *Usage) add(v Usage) {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CachedTokens += v.CachedTokens
	u.CostUSD += v.CostUSD
	u.CostReported = u.CostReported || v.CostReported
	u.SessionTotal = u.SessionTotal || v.SessionTotal
}

// Reason says how a run ended.
type Reason string

// The reasons a run ends.
const (
	// ReasonExited: the CLI exited by itself; see ExitCode and Failure.
	ReasonExited Reason = "exited"
	// ReasonFirstEvent: no event within FirstEventTimeout.
	ReasonFirstEvent Reason = "first_event"
	// ReasonIdle: no event for IdleTimeout.
	ReasonIdle Reason = "idle"
	// ReasonExitAfterResult: the CLI sent its final result but did not exit
	// within ExitGrace.
	ReasonExitAfterResult Reason = "exit_after_result"
	// ReasonTimeout: past Timeout.
	ReasonTimeout Reason = "timeout"
	// ReasonMaxCost: the cost passed MaxCostUSD.
	ReasonMaxCost Reason = "max_cost"
	// ReasonCanceled: the context was canceled.
	ReasonCanceled Reason = "canceled"
	// ReasonParked: the hook parked a tool call (Spec.ParkFile) and the
	// CLI was stopped; Outcome.Parked says which call.
	ReasonParked Reason = "parked"
	// ReasonInterrupted: a person stopped the run (Spec.Stop) to steer it;
	// its session is kept for the run that resumes it.
	ReasonInterrupted Reason = "interrupted"
)

// FailureClass sorts failed runs by what should happen next.
type FailureClass string

// The failure classes.
const (
	// FailureRateLimit: a rate or usage limit; wait for Failure.ResetAt
	// (or back off) and resume the session.
	FailureRateLimit FailureClass = "rate_limit"
	// FailureAuth: the API key or login was refused; a person must fix it.
	FailureAuth FailureClass = "auth"
	// FailureNetwork: the connection to the model API dropped mid-answer
	// (Node's fetch says "terminated", a reset, a hang-up); run again,
	// resuming the session.
	FailureNetwork FailureClass = "network"
	// FailureCrash: the CLI failed otherwise.
	FailureCrash FailureClass = "crash"
)

// Failure is why a run that did not succeed failed, when that can be told.
type Failure struct {
	Class   FailureClass
	Message string    // the line it was recognised from
	ResetAt time.Time // when a rate limit lifts, if the CLI said
}

// Outcome is how a run ended.
type Outcome struct {
	Reason    Reason
	SessionID string
	// Text is the final result's text, or the last assistant text when
	// there was no result event.
	Text string
	// Result is true when the CLI sent its final result event, and
	// ResultError when that result reported an error.
	Result      bool
	ResultError bool
	Usage       Usage
	// ExitCode is the CLI's exit status, -1 when a signal ended it.
	ExitCode int
	// Stderr is the last StderrTail bytes of the CLI's standard error, with
	// the values of Spec.Env masked.
	Stderr string
	// Failure is set when the run did not succeed and its class is known.
	Failure *Failure
	// Parked is set when the run stopped with a tool call parked for the
	// admins: resume its session once the call is answered.
	Parked *Park
	Events int
	// PID is the CLI's process id, also its process group's id.
	PID     int
	Started time.Time
	Ended   time.Time
}

// Succeeded reports whether the CLI exited 0 by itself after a final result
// that was not an error, with no tool call parked.
func (o Outcome) Succeeded() bool {
	return o.Reason == ReasonExited && o.ExitCode == 0 && o.Result && !o.ResultError && o.Parked == nil
}

// StderrTail is how many bytes of standard error an Outcome keeps.
const StderrTail = 8 << 10

// RunOwner names what a run works for. It is kept in the run's pid file,
// so a worker that starts after one died can tell whose run it held.
type RunOwner struct {
	TaskID     string `json:"task_id"`
	MsgID      string `json:"msg_id"`
	Role       string `json:"role"`
	Session    string `json:"session,omitempty"`
	WorkflowID string `json:"workflow_id,omitempty"`
	RunID      string `json:"run_id,omitempty"`
	ActivityID string `json:"activity_id,omitempty"`
}

// Reaped is a run a pid file named when ReapRuns read it.
type Reaped struct {
	PID    int
	Killed bool      // it still ran, and was killed
	Since  time.Time // when the pid file was written
	Owner  *RunOwner // nil for a pid file that names none
}
