package delivery

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
)

// ToolHook puts every tool call of a runner's CLI through the tool policy
// (tools.rules): the CLI runs `ampflow hook <cli>` before each tool, which
// asks the worker's API with the run's own credential (RunCredentials). Claude Code takes it
// through --settings and Codex through -c hooks=… on their command
// lines; Gemini CLI through a system settings file and OpenCode through a
// plugin, both written under data_dir by Prepare. Nothing is written into
// the repository.
type ToolHook struct {
	// Binary is the ampflow executable the hook runs.
	Binary string
	// APIURL is where the hook reaches the API.
	APIURL string
	// AskTimeout is tools.ask_timeout: the hook's own timeout leaves room
	// for the admins to answer.
	AskTimeout time.Duration
	// GeminiSettings is the Gemini CLI settings file holding the hook
	// (GeminiHookSettings), and OpenCodePlugin the OpenCode plugin that
	// runs it (OpenCodeHookPlugin); Prepare writes them. A runner whose
	// file is not there gets no hook.
	GeminiSettings string
	OpenCodePlugin string
}

// Hook env names the hook reads.
const (
	EnvAPIURL   = "AMPFLOW_API_URL"
	EnvAPIToken = "AMPFLOW_API_TOKEN"
	EnvToolTask = "AMPFLOW_TASK_ID"
	EnvWorktree = "AMPFLOW_WORKTREE"
)

// apply gives spec the hook for a run on taskID that presents
// credential; it reports whether it did. A run without a credential
// gets no hook.
func (h *ToolHook) apply(spec *runner.Spec, taskID, credential string) bool {
	if h == nil || h.Binary == "" || credential == "" {
		return false
	}
	switch spec.Runner {
	case runner.Claude:
		spec.Settings = ClaudeHookSettings(h.Binary, h.AskTimeout)
	case runner.Codex:
		spec.CodexHooks = CodexHooks(h.Binary, h.AskTimeout)
	case runner.Gemini:
		if h.GeminiSettings == "" {
			return false
		}
		spec.Env = setEnv(spec.Env, envGeminiSettings+"="+h.GeminiSettings)
	case runner.OpenCode:
		if h.OpenCodePlugin == "" {
			return false
		}
		kv, err := addOpenCodePlugin(spec.Env, h.OpenCodePlugin)
		if err != nil {
			return false
		}
		spec.Env = setEnv(spec.Env, kv)
	case runner.ACP:
		// The hook runs in the worker, on each permission request: the
		// agent's environment gets none of its variables.
		spec.Permission = h.acpPermission(credential, taskID, spec.Dir, &spec.ParkFile)
		return true
	default:
		return false
	}
	spec.Env = append(spec.Env, EnvAPIURL+"="+h.APIURL, EnvToolTask+"="+taskID, EnvWorktree+"="+spec.Dir, EnvAPIToken+"="+credential)
	return true
}

// ClaudeHookSettings is the Claude Code settings JSON (for --settings)
// whose PreToolUse hook runs `ampflow hook claude` before every tool. Its
// timeout is the ask timeout and a minute more, so an ask is answered (or
// expires into deny) before Claude Code gives up on the hook.
func ClaudeHookSettings(binary string, askTimeout time.Duration) string {
	timeout := int((askTimeout + time.Minute).Seconds())
	s := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"matcher": "*",
		"hooks": []any{map[string]any{
			"type": "command", "command": shellQuote(binary) + " hook claude", "timeout": timeout,
		}},
	}}}}
	b, _ := json.Marshal(s)
	return string(b)
}

// CodexHooks is Codex's hooks table, as a TOML inline value for
// `-c hooks=…`, whose PreToolUse hook runs `ampflow hook codex` before
// every tool, with the same timeout as Claude Code's.
func CodexHooks(binary string, askTimeout time.Duration) string {
	timeout := int((askTimeout + time.Minute).Seconds())
	// JSON strings are TOML basic strings.
	cmd, _ := json.Marshal(shellQuote(binary) + " hook codex")
	return fmt.Sprintf(`{PreToolUse=[{matcher="*",hooks=[{type="command",command=%s,timeout=%d}]}]}`, cmd, timeout)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
