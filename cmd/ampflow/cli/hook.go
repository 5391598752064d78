package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/amp/task"
)

// hookInput is what Claude Code (PreToolUse), Codex (PreToolUse) and
// Gemini CLI (BeforeTool) write on a command hook's standard input, and
// what ampflow's OpenCode plugin (tool.execute.before) writes in their
// form; each sends more, which is ignored.
type hookInput struct {
	SessionID     string          `json:"session_id"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	CWD           string          `json:"cwd"`
	// Claude Code's: the session's JSONL transcript and the call's id.
	TranscriptPath string `json:"transcript_path"`
	ToolUseID      string `json:"tool_use_id"`
}

// hookCLIs are the CLIs `ampflow hook` speaks for.
var hookCLIs = []string{"claude", "codex", "gemini", "opencode", "acp"}

func (a *App) hookCommand() *cobra.Command {
	var maxWait time.Duration
	var plugin bool
	cmd := &cobra.Command{
		Use:   "hook claude|codex|gemini|opencode|acp",
		Short: "Decide an agent CLI's tool call by ampflow's tool policy (a PreToolUse/BeforeTool hook)",
		Long: "Hook reads the JSON a CLI's pre-tool hook gets on standard input (Claude Code\n" +
			"and Codex PreToolUse, Gemini CLI BeforeTool, ampflow's OpenCode plugin), asks the HTTP API\n" +
			"(POST /v1/tool-calls, as AMPFLOW_API_TOKEN) whether the call may run for the task\n" +
			"AMPFLOW_TASK_ID, waits while the admins answer an ask, and prints the answer in\n" +
			"the CLI's hook format. A call the API cannot decide (no task, the API\n" +
			"unreachable) is denied, with the reason. AMPFLOW_WORKTREE, when set, is the\n" +
			"directory the agent may write in (else the hook's cwd). See docs/tools.md.",
		Example: "  # Claude Code settings.json:\n" +
			`  {"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"ampflow hook claude","timeout":900}]}]}}`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: hookCLIs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cli := args[0]
			if !contains(hookCLIs, cli) {
				return UsageError(fmt.Errorf("hook: %q is not one of %s", cli, strings.Join(hookCLIs, ", ")))
			}
			if plugin {
				return a.printOpenCodePlugin(cli, maxWait)
			}
			allow, reason, park, in := a.hookDecide(cmd.Context(), cli, maxWait)
			if park != "" {
				return a.hookPark(cmd.Context(), cli, park, reason, in)
			}
			return a.PrintJSON(hookOutput(cli, allow, reason))
		},
	}
	cmd.Flags().DurationVar(&maxWait, "max-wait", 30*time.Minute, "deny an ask not answered within `DURATION` (a runner's hook, given AMPFLOW_PARK_FILE, parks the call at tools.ask_timeout instead)")
	cmd.Flags().BoolVar(&plugin, "plugin", false, "with opencode: print the OpenCode plugin that runs this hook before every tool, instead of deciding a call")
	return cmd
}

// printOpenCodePlugin prints the plugin OpenCode runners get, running this
// executable: OpenCode has no command hooks.
func (a *App) printOpenCodePlugin(cli string, maxWait time.Duration) error {
	if cli != "opencode" {
		return UsageError(fmt.Errorf("hook: --plugin is for opencode, not %s", cli))
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the ampflow executable: %w", err)
	}
	_, err = a.Stdout.Write(delivery.OpenCodeHookPlugin(bin, maxWait))
	return err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// hookDecide asks the API about the call on stdin. allow is nil when the
// policy allowed the call by tools.default: the CLI's own permission
// settings then apply. park is the call's id when a runner's ask is still
// open at tools.ask_timeout: the run is to be parked (AMPFLOW_PARK_FILE).
// in is the hook's input, as far as it was read.
func (a *App) hookDecide(ctx context.Context, cli string, maxWait time.Duration) (allow *bool, reason, park string, in hookInput) {
	deny := func(format string, args ...any) (*bool, string, string, hookInput) {
		msg := "ampflow: " + fmt.Sprintf(format, args...)
		fmt.Fprintln(a.Stderr, msg)
		no := false
		return &no, msg, "", in
	}
	raw, err := io.ReadAll(io.LimitReader(a.Stdin, 1<<20))
	if err != nil {
		return deny("reading the hook's input: %v", err)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return deny("the hook's input is not JSON: %v", err)
	}
	if in.ToolName == "" {
		return deny("the hook's input names no tool_name")
	}
	taskID, _ := a.LookupEnv("AMPFLOW_TASK_ID")
	if taskID == "" {
		return deny("AMPFLOW_TASK_ID is not set: no task to ask about %s", in.ToolName)
	}
	worktree, _ := a.LookupEnv("AMPFLOW_WORKTREE")
	parkFile, _ := a.LookupEnv(envParkFile)
	c, err := a.api()
	if err != nil {
		return deny("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	start := time.Now()
	first := maxInboxWait
	if parkFile != "" {
		// The answer says how long to wait before parking.
		first = 0
	}
	tc, err := c.ToolCall(ctx, task.ToolCallRequest{TaskID: taskID, CLI: cli, Tool: in.ToolName, Input: in.ToolInput,
		CWD: in.CWD, Worktree: worktree}, first)
	for err == nil && tc.Decision == task.ToolPending {
		wait := maxInboxWait
		if parkFile != "" && tc.AskTimeout > 0 {
			left := tc.AskTimeout - time.Since(start)
			if left <= 0 {
				return nil, fmt.Sprintf("ampflow: %s (%s) waits for the admins past tools.ask_timeout (%s): the run is parked until they answer",
					in.ToolName, tc.ID, tc.AskTimeout), tc.ID, in
			}
			wait = max(min(wait, left), time.Second)
		}
		tc, err = c.ToolCallGet(ctx, tc.ID, wait)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return deny("no answer to %s within %s", in.ToolName, maxWait)
	case err != nil:
		return deny("asking about %s: %v", in.ToolName, err)
	case tc.Decision == task.ToolDeny:
		return deny("%s denied (%s): %s", in.ToolName, tc.ID, tc.Reason)
	case tc.Decision != task.ToolAllow:
		return deny("%s: unexpected answer %q", tc.ID, tc.Decision)
	}
	yes := true
	if tc.By == task.ByPolicy && tc.Rule == "" {
		return nil, "", "", in
	}
	why := "allowed by ampflow (" + tc.ID + ")"
	if tc.By != task.ByPolicy {
		why = fmt.Sprintf("allowed by %s via %s (%s)", tc.By, tc.Channel, tc.ID)
	}
	return &yes, why, "", in
}

// hookOutput is the answer in the CLI's hook format.
func hookOutput(cli string, allow *bool, reason string) any {
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
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": reason}}
}
