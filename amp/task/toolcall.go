package task

import (
	"encoding/json"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
)

// KindToolCall asks the admins whether an agent CLI may make a tool call
// the tool policy (tools.rules) says to ask about.
const KindToolCall decision.Kind = "tool_call"

// Options of a tool_call decision.
const (
	OptAllowOnce = "allow_once" // this call only
	OptAllowTool = "allow_tool" // this tool, for the rest of the task
	OptAllowRepo = "allow_repo" // this destination, for every task of the repository (a network ask)
	OptDeny      = "deny"       // refuse the call; a note says why
)

// UpdateToolCall records an agent CLI's tool call in the task and, when
// the policy asks, raises a tool_call decision: ToolCall in and out.
const UpdateToolCall = "tool_call"

// What became of a tool call (ToolCall.Decision).
const (
	ToolAllow   = "allow"
	ToolDeny    = "deny"
	ToolPending = "pending"
)

// ByPolicy is who decided a tool call the policy allowed or denied.
const ByPolicy = "policy"

// RecordToolCall is the SSOT record kind of a tool call; a call the admins
// decided has a second record, its id followed by ToolCallOutcome.
const (
	RecordToolCall  = "tool_call"
	ToolCallOutcome = "-outcome"
)

// MaxToolInput bounds the input a tool call's record keeps; its digest
// covers all of it.
const MaxToolInput = 4096

// ToolCall is one tool call of an agent CLI as the task's chain keeps it:
// what was called, what the policy said, and what became of it.
type ToolCall struct {
	// ID is "<task_id>-tc<n>", given by the task.
	ID     string `json:"id"`
	TaskID string `json:"task_id"`
	// Agent is who asked: the API token's name. Role is the role of the
	// run that asked (executor, reviewer), from its run credential; empty
	// for a call made with an API token.
	Agent string   `json:"agent,omitempty"`
	Role  amp.Role `json:"role,omitempty"`
	CLI   string   `json:"cli,omitempty"`
	Tool  string   `json:"tool"`
	Kind  string   `json:"kind"`
	// Input is the tool's input as canonical JSON, cut to MaxToolInput
	// bytes (InputTruncated); InputDigest is the SHA-256 (hex) of all of
	// it and InputBytes its length.
	Input          string `json:"input"`
	InputTruncated bool   `json:"input_truncated,omitempty"`
	InputBytes     int    `json:"input_bytes"`
	InputDigest    string `json:"input_digest"`
	CWD            string `json:"cwd,omitempty"`
	Worktree       string `json:"worktree,omitempty"`
	// Rule is the policy rule that matched (empty: tools.default);
	// Action what it said (allow, deny, ask), Reason and Risk its own.
	Rule   string `json:"rule,omitempty"`
	Action string `json:"action"`
	Reason string `json:"reason,omitempty"`
	Risk   string `json:"risk,omitempty"`
	// AskTimeout is how long the CLI waits for an ask's answer before
	// its run is parked; ParkTimeout how long the ask stays open after
	// that before its decision expires into deny.
	AskTimeout  time.Duration `json:"ask_timeout,omitempty"`
	ParkTimeout time.Duration `json:"park_timeout,omitempty"`
	// Decision is allow, deny or pending (an ask the admins have yet to
	// answer); By is ByPolicy, the admin who answered, or ampflow for an
	// expired or withdrawn ask.
	Decision   string `json:"decision"`
	By         string `json:"by,omitempty"`
	Channel    string `json:"channel,omitempty"`
	Option     string `json:"option,omitempty"`
	Note       string `json:"note,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
	// Digest is the decision's: over the task, the tool, the input and
	// the working directory.
	Digest    string    `json:"digest,omitempty"`
	At        time.Time `json:"at"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
}

// Decided reports whether the call is allowed or denied.
func (c ToolCall) Decided() bool { return c.Decision == ToolAllow || c.Decision == ToolDeny }

// ToolCallRequest is the body of POST /v1/tool-calls: a tool call an
// agent CLI is about to make, for the policy and the task to decide.
type ToolCallRequest struct {
	TaskID string `json:"task_id"`
	// CLI names the agent CLI (claude, codex, gemini, opencode): it says
	// what its tool names mean.
	CLI  string `json:"cli,omitempty"`
	Tool string `json:"tool"`
	// Input is the tool's input as the CLI gave it.
	Input json.RawMessage `json:"input,omitempty"`
	// CWD is where the tool runs; Worktree where the agent may write
	// (CWD when empty).
	CWD      string `json:"cwd,omitempty"`
	Worktree string `json:"worktree,omitempty"`
}

// ToolCallList is the answer of GET /v1/tasks/{id}/tool-calls.
type ToolCallList struct {
	ToolCalls []ToolCall `json:"tool_calls"`
}

// Asker names who made a tool call as the admins see it: the role and
// its CLI, "executor (codex)"; without a role, the agent's name and its
// CLI, "exec (claude)"; "an agent" when nothing names it.
func Asker(role amp.Role, cli, agent string) string {
	who := string(role)
	if who == "" {
		who = agent
	}
	switch {
	case who == "" && cli == "":
		return "an agent"
	case who == "":
		return cli
	case cli == "":
		return who
	}
	return who + " (" + cli + ")"
}

// toolCallAlias has ToolCall's fields without its JSON methods.
type toolCallAlias ToolCall

// toolCallJSON is ToolCall on the wire: its durations as text, the
// house form of every duration in the API and `-o json` (FormatDuration).
type toolCallJSON struct {
	toolCallAlias
	AskTimeout  Duration `json:"ask_timeout,omitempty"`
	ParkTimeout Duration `json:"park_timeout,omitempty"`
}

// MarshalJSON writes ask_timeout and park_timeout as text ("10m").
func (c ToolCall) MarshalJSON() ([]byte, error) {
	return json.Marshal(toolCallJSON{toolCallAlias: toolCallAlias(c), AskTimeout: Duration(c.AskTimeout), ParkTimeout: Duration(c.ParkTimeout)})
}

// UnmarshalJSON reads the durations as text or, as tasks started before
// carry them, as numbers of nanoseconds.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var in toolCallJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*c = ToolCall(in.toolCallAlias)
	c.AskTimeout, c.ParkTimeout = time.Duration(in.AskTimeout), time.Duration(in.ParkTimeout)
	return nil
}
