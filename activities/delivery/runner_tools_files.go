package delivery

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities"
)

// Gemini CLI reads hooks from settings files only. ampflow writes the hook
// into a file under data_dir and names it as the system settings, which
// override the user's and the workspace's, so a repository cannot switch
// the hook off with hooksConfig.enabled.
const envGeminiSettings = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"

// GeminiHookName names the hook in Gemini CLI's settings (hooksConfig.disabled
// lists hooks by name).
const GeminiHookName = "ampflow-tool-policy"

// Prepare writes the files Gemini CLI and OpenCode runners take the hook
// from into dir (data_dir/tools) and points GeminiSettings and
// OpenCodePlugin at them. Gemini CLI reads a system settings file only
// when it and every directory above it belong to root and nobody else
// can write them: where they do not, GeminiSettings stays empty (Gemini
// CLI runners get no hook) and the error says why.
func (h *ToolHook) Prepare(dir string) error {
	if h == nil || h.Binary == "" {
		return nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("writing the tool hook's files: %w", err)
	}
	plugin, err := writePrivate(filepath.Join(dir, "opencode-tool-policy.js"), OpenCodeHookPlugin(h.AskTimeout))
	if err != nil {
		return err
	}
	h.OpenCodePlugin = plugin
	settings, err := writePrivate(filepath.Join(dir, "gemini-settings.json"), GeminiHookSettings(h.command("gemini"), h.AskTimeout))
	if err != nil {
		return err
	}
	if err := rootOnly(settings); err != nil {
		return fmt.Errorf("Gemini CLI would skip %s: %w", settings, err)
	}
	h.GeminiSettings = settings
	return nil
}

// hookTimeout is how long a CLI waits for the hook: the ask timeout and a
// minute more, so an ask is answered (or expires into deny) first.
func hookTimeout(askTimeout time.Duration) time.Duration { return askTimeout + time.Minute }

// GeminiHookSettings is the Gemini CLI settings JSON whose BeforeTool hook
// runs command before every tool (timeout in milliseconds).
// It keeps the hook's variables visible to it when Gemini CLI redacts its
// children's environment.
func GeminiHookSettings(command string, askTimeout time.Duration) []byte {
	s := map[string]any{
		"hooksConfig": map[string]any{"enabled": true},
		"hooks": map[string]any{"BeforeTool": []any{map[string]any{
			"matcher": ".*",
			"hooks": []any{map[string]any{
				"type": "command", "name": GeminiHookName, "command": command,
				"timeout": hookTimeout(askTimeout).Milliseconds(),
			}},
		}}},
		"security": map[string]any{"environmentVariableRedaction": map[string]any{
			"allowed": []string{EnvAPIURL, EnvAPIToken, EnvToolTask, EnvWorktree, activities.EnvParkFile}}},
		// No usage statistics: a run reaches only the hosts it needs.
		"privacy": map[string]any{"usageStatisticsEnabled": false},
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	return b
}

// OpenCodeHookPlugin is an OpenCode plugin whose tool.execute.before posts
// every call to the API (HookRoute) from OpenCode's own process, as
// {"tool_name","tool_input","cwd","session_id"}, with the run's credential,
// and throws the reason of a deny: OpenCode then reports the call to the
// model as failed with that reason, and the model carries on. The API
// waits for an ask's answer and parks the run at the ask timeout. A call
// the API does not answer, within the ask timeout and a minute, is denied.
func OpenCodeHookPlugin(askTimeout time.Duration) []byte {
	return []byte(strings.NewReplacer("TIMEOUT_MS", fmt.Sprint(hookTimeout(askTimeout).Milliseconds()),
		"HOOK_ROUTE", HookRoute).Replace(openCodePlugin))
}

const openCodePlugin = `// ampflow's tool policy for OpenCode, written by ampflow (docs/tools.md).
const timeoutMs = TIMEOUT_MS

async function decide(call) {
  const deny = (reason) => ({ decision: "deny", reason: "ampflow: " + reason })
  const env = process.env
  if (!env.AMPFLOW_API_URL) return deny("AMPFLOW_API_URL is not set: no API to ask about " + call.tool_name)
  const query = new URLSearchParams({ task: env.AMPFLOW_TASK_ID ?? "", worktree: env.AMPFLOW_WORKTREE ?? "" })
  const url = env.AMPFLOW_API_URL.replace(/\/+$/, "") + "HOOK_ROUTEopencode?" + query
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: "Bearer " + (env.AMPFLOW_API_TOKEN ?? "") },
      body: JSON.stringify(call),
      signal: AbortSignal.timeout(timeoutMs),
    })
    const text = await res.text()
    if (!res.ok) return deny("asking about " + call.tool_name + ": " + res.status + " " + text.slice(0, 300))
    return JSON.parse(text || "{}")
  } catch (err) {
    return deny("asking about " + call.tool_name + ": " + (err?.message ?? err))
  }
}

export const AmpflowToolPolicy = async ({ directory }) => ({
  "tool.execute.before": async (input, output) => {
    const answer = await decide({
      hook_event_name: "tool.execute.before",
      session_id: input.sessionID,
      tool_name: input.tool,
      tool_input: output.args ?? {},
      cwd: directory,
    })
    if (answer.decision === "deny") throw new Error(answer.reason || "denied by ampflow")
  },
})
`

// addOpenCodePlugin adds the plugin at path to the OPENCODE_CONFIG_CONTENT
// the agent's env already sets, or to a new one.
func addOpenCodePlugin(env []string, path string) (string, error) {
	cfg := map[string]any{}
	if theirs, ok := lookupEnv(env, envOpenCodeContent); ok && strings.TrimSpace(theirs) != "" {
		if err := json.Unmarshal([]byte(theirs), &cfg); err != nil {
			return "", fmt.Errorf("reading the agent's %s: %w", envOpenCodeContent, err)
		}
	}
	plugins, _ := cfg["plugin"].([]any)
	cfg["plugin"] = append(plugins, (&url.URL{Scheme: "file", Path: path}).String())
	b, err := json.Marshal(cfg)
	return envOpenCodeContent + "=" + string(b), err
}
