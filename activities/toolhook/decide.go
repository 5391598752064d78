package toolhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Run reads the call from in, decides it and writes the answer to out in
// the CLI's hook format. A call that cannot be decided is denied, with
// the reason.
func (h *Hook) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	allow, reason, park, input := h.Decide(ctx, in)
	if park != "" {
		return h.park(ctx, park, reason, input, out)
	}
	return WriteJSON(out, Output(h.CLI, allow, reason))
}

// WriteJSON writes v as one line of JSON.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (h *Hook) stderr() io.Writer {
	if h.Stderr == nil {
		return io.Discard
	}
	return h.Stderr
}

// Decide asks the API about the call read from r. allow is nil when the
// policy allowed the call by tools.default: the CLI's own permission
// settings then apply. park is the call's id when the ask is still open
// at tools.ask_timeout and the hook has a ParkFile. in is the hook's
// input, as far as it was read.
func (h *Hook) Decide(ctx context.Context, r io.Reader) (allow *bool, reason, park string, in Input) {
	deny := func(format string, args ...any) (*bool, string, string, Input) {
		msg := "ampflow: " + fmt.Sprintf(format, args...)
		fmt.Fprintln(h.stderr(), msg)
		return No(), msg, "", in
	}
	raw, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return deny("reading the hook's input: %v", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return deny("the hook's input is not JSON: %v", err)
	}
	if in.ToolName == "" {
		return deny("the hook's input names no tool_name")
	}
	if h.TaskID == "" {
		return deny("%s is not set: no task to ask about %s", EnvTaskID, in.ToolName)
	}
	if h.ConfigErr != nil {
		return deny("%v", h.ConfigErr)
	}
	maxWait := h.MaxWait
	if maxWait <= 0 {
		maxWait = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	start := time.Now()
	first := MaxPoll
	if h.ParkFile != "" {
		// The answer says how long to wait before parking.
		first = 0
	}
	tc, err := h.toolCall(ctx, Request{TaskID: h.TaskID, CLI: h.CLI, Tool: in.ToolName, Input: in.ToolInput,
		CWD: in.CWD, Worktree: h.Worktree}, first)
	for err == nil && tc.Decision == Pending {
		wait := MaxPoll
		if ask := time.Duration(tc.AskTimeout); h.ParkFile != "" && ask > 0 {
			left := ask - time.Since(start)
			if left <= 0 {
				return nil, ParkReason(in.ToolName, tc.ID, ask), tc.ID, in
			}
			wait = max(min(wait, left), time.Second)
		}
		tc, err = h.toolCallGet(ctx, tc.ID, wait)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return deny("no answer to %s within %s", in.ToolName, maxWait)
	case err != nil:
		return deny("asking about %s: %v", in.ToolName, err)
	}
	allow, reason = Verdict(in.ToolName, tc)
	if allow != nil && !*allow {
		fmt.Fprintln(h.stderr(), reason)
	}
	return allow, reason, "", in
}

// ParkReason is what the hook says of a call it parks.
func ParkReason(tool, id string, askTimeout time.Duration) string {
	return fmt.Sprintf("ampflow: %s (%s) waits for the admins past tools.ask_timeout (%s): the run is parked until they answer",
		tool, id, askTimeout)
}

// Verdict is the hook's answer to a decided call: nil when the policy
// allowed it by tools.default (no rule), so the CLI's own permission
// settings apply; else allow or deny, with the reason.
func Verdict(tool string, c Call) (allow *bool, reason string) {
	switch {
	case c.Decision == Deny:
		return No(), fmt.Sprintf("ampflow: %s denied (%s): %s", tool, c.ID, c.Reason)
	case c.Decision != Allow:
		return No(), fmt.Sprintf("ampflow: %s: unexpected answer %q", c.ID, c.Decision)
	case c.By == ByPolicy && c.Rule == "":
		return nil, ""
	case c.By == ByPolicy:
		return Yes(), "allowed by ampflow (" + c.ID + ")"
	}
	return Yes(), fmt.Sprintf("allowed by %s via %s (%s)", c.By, c.Channel, c.ID)
}

// Yes and No are the answers Output takes.
func Yes() *bool { b := true; return &b }

// No is a deny.
func No() *bool { b := false; return &b }

// Output is the answer in the CLI's hook format: allow nil leaves the
// call to the CLI's own permission settings.
func Output(cli string, allow *bool, reason string) any {
	switch cli {
	case "gemini", "opencode", "acp":
		// Gemini CLI's BeforeTool output; ampflow's OpenCode plugin reads
		// the same and throws the reason of a deny, and the ACP runner
		// answers the agent's permission request by it.
		if allow == nil {
			return map[string]any{}
		}
		if *allow {
			return map[string]any{"decision": "allow", "reason": reason}
		}
		return map[string]any{"decision": "deny", "reason": reason}
	case "codex":
		// Codex takes an allow as "no objection": {} lets its own
		// approval settings apply.
		if allow == nil || *allow {
			return map[string]any{}
		}
	}
	if allow == nil {
		return map[string]any{}
	}
	decision := "deny"
	if *allow {
		decision = "allow"
	}
	return claudeOutput(decision, reason)
}

// claudeOutput is Claude Code's PreToolUse answer (Codex reads the same).
func claudeOutput(decision, reason string) map[string]any {
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": reason}}
}
