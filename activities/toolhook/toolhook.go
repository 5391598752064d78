// Package toolhook is the tool policy's hook as an agent CLI runs it
// before each tool call: it reads the CLI's hook input, asks ampflow's API
// (POST /v1/tool-calls) with the run's credential, waits while the admins
// answer an ask, parks the run at tools.ask_timeout, and answers in the
// CLI's hook format. It imports the standard library only, so the
// ampflow-hook binary that Codex and Gemini CLI run is small and starts
// fast; `ampflow hook` and the API's hook route share it.
package toolhook

import (
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// Env names the hook reads.
const (
	EnvAPIURL   = "AMPFLOW_API_URL"
	EnvAPIToken = "AMPFLOW_API_TOKEN"
	EnvTaskID   = "AMPFLOW_TASK_ID"
	EnvWorktree = "AMPFLOW_WORKTREE"
	// EnvParkFile names the file the hook writes when it parks a call
	// (Park).
	EnvParkFile = "AMPFLOW_PARK_FILE"
)

// CLIs are the CLIs the hook speaks for.
var CLIs = []string{"claude", "codex", "gemini", "opencode", "acp"}

// Input is what Claude Code (PreToolUse), Codex (PreToolUse) and Gemini
// CLI (BeforeTool) send their hooks, and what ampflow's OpenCode plugin
// (tool.execute.before) sends in their form; each sends more, which is
// ignored.
type Input struct {
	SessionID     string          `json:"session_id"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	CWD           string          `json:"cwd"`
	// Claude Code's: the session's JSONL transcript and the call's id.
	TranscriptPath string `json:"transcript_path"`
	ToolUseID      string `json:"tool_use_id"`
}

// Hook is one run of the hook for a CLI.
type Hook struct {
	// CLI is one of CLIs: it names the answer's format.
	CLI string
	// APIURL and Token reach the API; TaskID is the task the call is
	// for, Worktree where the agent may write (the call's cwd when
	// empty), ParkFile where a call still asked at tools.ask_timeout is
	// parked (empty: the hook waits up to MaxWait).
	APIURL, Token, TaskID, Worktree, ParkFile string
	// MaxWait bounds the wait for an ask's answer.
	MaxWait time.Duration
	// ConfigErr, when set, is why the API cannot be asked: every call
	// is denied with it.
	ConfigErr error
	// Stderr gets the reasons of denies; nil discards them.
	Stderr io.Writer
	// HTTP is the client; nil is one without a timeout (the context
	// bounds each request).
	HTTP *http.Client
}

// FromEnv is the hook of cli as a runner's environment sets it.
func FromEnv(cli string, lookup func(string) (string, bool)) *Hook {
	get := func(name string) string {
		v, _ := lookup(name)
		return v
	}
	return &Hook{CLI: cli, APIURL: get(EnvAPIURL), Token: get(EnvAPIToken), TaskID: get(EnvTaskID),
		Worktree: get(EnvWorktree), ParkFile: get(EnvParkFile), MaxWait: 30 * time.Minute}
}

// Valid reports whether cli is one the hook speaks for.
func Valid(cli string) bool {
	for _, c := range CLIs {
		if c == cli {
			return true
		}
	}
	return false
}
