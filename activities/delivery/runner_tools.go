package delivery

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/toolhook"
)

// ToolHook puts every tool call of a runner's CLI through the tool policy
// (tools.rules), asking the worker's API with the run's own credential
// (RunCredentials) before each tool. Claude Code posts the call to the
// API itself (an HTTP hook, HookRoute) when the API is this worker's;
// OpenCode's plugin fetches it from OpenCode's process; Codex and Gemini
// CLI run the small ampflow-hook binary (HookBinary), else `ampflow hook`.
// Claude Code takes its hook through --settings and Codex through
// -c hooks=… on their command lines; Gemini CLI through a system settings
// file and OpenCode through a plugin, both written under data_dir by
// Prepare. Nothing is written into the repository.
type ToolHook struct {
	// Binary is the ampflow executable: `ampflow hook` is the command
	// hook where there is no HookBinary.
	Binary string
	// HookBinary is the ampflow-hook executable (runner.hook_binary);
	// empty: `ampflow hook`, which takes some 60ms a call to start.
	HookBinary string
	// APIURL is where the hook reaches the API.
	APIURL string
	// HTTP is set when the API at APIURL is this worker's own, which
	// writes a Claude Code run's park file: Claude Code then asks it over
	// HTTP. Else it runs the command hook.
	HTTP bool
	// AskTimeout is tools.ask_timeout: the hook's own timeout leaves room
	// for the admins to answer.
	AskTimeout time.Duration
	// GeminiSettings is the Gemini CLI settings file holding the hook
	// (GeminiHookSettings), and OpenCodePlugin the OpenCode plugin
	// (OpenCodeHookPlugin); Prepare writes them. A runner whose file is
	// not there gets no hook.
	GeminiSettings string
	OpenCodePlugin string
}

// Hook env names the hook reads.
const (
	EnvAPIURL   = toolhook.EnvAPIURL
	EnvAPIToken = toolhook.EnvAPIToken
	EnvToolTask = toolhook.EnvTaskID
	EnvWorktree = toolhook.EnvWorktree
)

// HookRoute is the API's route Claude Code's HTTP hook posts to, the CLI
// appended (integrations/toolcalls).
const HookRoute = "/v1/hooks/"

// apply gives spec the hook for a run on taskID that presents
// credential; it reports whether it did. A run without a credential
// gets no hook.
func (h *ToolHook) apply(spec *runner.Spec, taskID, credential string) bool {
	if h == nil || h.Binary == "" || credential == "" {
		return false
	}
	switch spec.Runner {
	case runner.Claude:
		if h.HTTP {
			spec.Settings = ClaudeHTTPHookSettings(h.APIURL, spec.Dir, h.AskTimeout)
		} else {
			spec.Settings = ClaudeHookSettings(h.command("claude"), h.AskTimeout)
		}
	case runner.Codex:
		spec.CodexHooks = CodexHooks(h.command("codex"), h.AskTimeout)
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

// command is the shell command of cli's command hook.
func (h *ToolHook) command(cli string) string {
	if h.HookBinary != "" {
		return shellQuote(h.HookBinary) + " " + cli
	}
	return shellQuote(h.Binary) + " hook " + cli
}

// Binaries are the executables a run's hook runs, for its sandbox to
// bind read-only.
func (h *ToolHook) Binaries() []string {
	if h == nil {
		return nil
	}
	if h.HookBinary != "" {
		return []string{h.Binary, h.HookBinary}
	}
	return []string{h.Binary}
}

// ClaudeHookSettings is the Claude Code settings JSON (for --settings)
// whose PreToolUse hook runs command before every tool. Its timeout is
// the ask timeout and a minute more, so an ask is answered (or expires
// into deny) before Claude Code gives up on the hook.
func ClaudeHookSettings(command string, askTimeout time.Duration) string {
	return claudeSettings(map[string]any{"type": "command", "command": command, "timeout": int(hookTimeout(askTimeout).Seconds())})
}

// ClaudeHTTPHookSettings is the Claude Code settings JSON whose PreToolUse
// hook posts every tool call to the API at apiURL (HookRoute), with the
// run's credential from AMPFLOW_API_TOKEN: no process starts per call.
// The API answers in Claude Code's format, waits for an ask's answer and
// parks the run at the ask timeout. onFailure "block" makes an API that
// cannot be reached, or that refuses the credential, deny the call, as
// the command hook does; Claude Code would otherwise let it run.
func ClaudeHTTPHookSettings(apiURL, worktree string, askTimeout time.Duration) string {
	u := strings.TrimRight(apiURL, "/") + HookRoute + "claude?" + url.Values{"worktree": {worktree}}.Encode()
	return claudeSettings(map[string]any{
		"type": "http", "url": u, "timeout": int(hookTimeout(askTimeout).Seconds()), "onFailure": "block",
		"headers":        map[string]string{"Authorization": "Bearer $" + EnvAPIToken},
		"allowedEnvVars": []string{EnvAPIToken},
	})
}

func claudeSettings(hook map[string]any) string {
	s := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"matcher": "*", "hooks": []any{hook},
	}}}}
	b, _ := json.Marshal(s)
	return string(b)
}

// CodexHooks is Codex's hooks table, as a TOML inline value for
// `-c hooks=…`, whose PreToolUse hook runs command before every tool,
// with the same timeout as Claude Code's.
func CodexHooks(command string, askTimeout time.Duration) string {
	// JSON strings are TOML basic strings.
	cmd, _ := json.Marshal(command)
	return fmt.Sprintf(`{PreToolUse=[{matcher="*",hooks=[{type="command",command=%s,timeout=%d}]}]}`, cmd, int(hookTimeout(askTimeout).Seconds()))
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
