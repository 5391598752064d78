package delivery

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// RunnerMCP hands each runner's CLI ampflow's MCP server (the API's /mcp)
// with the run's own credential (RunCredentials), so a running agent can
// message its peers, take a lease or ask for approval as a tool. The
// credential is only in the CLI's environment: its configuration names
// the variable.
type RunnerMCP struct {
	// URL is the API's /mcp.
	URL string
	// AgentKeys are the gate keys of the executor's and the reviewer's
	// own gate agents (agents.<role>.gate_agent): a run presents its
	// role's, never another's, so the signal and contract tools act as
	// that agent. A role without one gets no key.
	AgentKeys map[amp.Role]string
}

// Gemini CLI reads its servers from settings files only. ampflow writes
// one under data_dir and names it in this variable, so neither the
// repository nor the user's settings are touched; Gemini CLI skips the
// file when data_dir or a parent is writable by others.
const envGeminiDefaults = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"

const envOpenCodeContent = "OPENCODE_CONFIG_CONTENT"

// apply gives spec the server for a run of role presenting credential;
// workDir is data_dir, where Gemini CLI's settings file goes. It reports
// whether it did: a run without a credential gets no server.
func (m *RunnerMCP) apply(spec *runner.Spec, role amp.Role, credential, workDir string) (bool, error) {
	if m == nil || m.URL == "" || credential == "" {
		return false, nil
	}
	cfg, err := runner.MCP{URL: m.URL, Token: credential, AgentKey: m.AgentKeys[role]}.Config(spec.Runner)
	if err != nil {
		return false, err
	}
	spec.Args = append(spec.Args, cfg.Args...)
	spec.MCPServers = append(spec.MCPServers, cfg.Servers...)
	for _, kv := range cfg.Env {
		name, value, _ := strings.Cut(kv, "=")
		if name == envOpenCodeContent {
			if kv, err = mergeOpenCode(spec.Env, value); err != nil {
				return false, err
			}
		}
		spec.Env = setEnv(spec.Env, kv)
	}
	if cfg.Settings != nil {
		path, err := writePrivate(filepath.Join(workDir, "mcp", string(role)+".gemini.json"), cfg.Settings)
		if err != nil {
			return false, err
		}
		spec.Env = setEnv(spec.Env, envGeminiDefaults+"="+path)
	}
	return true, nil
}

// mergeOpenCode adds ampflow's server to an OPENCODE_CONFIG_CONTENT the
// agent's env already sets.
func mergeOpenCode(env []string, ours string) (string, error) {
	theirs, ok := lookupEnv(env, envOpenCodeContent)
	if !ok || strings.TrimSpace(theirs) == "" {
		return envOpenCodeContent + "=" + ours, nil
	}
	var t, o map[string]any
	if err := json.Unmarshal([]byte(theirs), &t); err != nil {
		return "", fmt.Errorf("reading the agent's %s: %w", envOpenCodeContent, err)
	}
	if err := json.Unmarshal([]byte(ours), &o); err != nil {
		return "", err
	}
	servers, _ := t["mcp"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	for k, v := range o["mcp"].(map[string]any) {
		servers[k] = v
	}
	t["mcp"] = servers
	b, err := json.Marshal(t)
	return envOpenCodeContent + "=" + string(b), err
}

// setEnv sets kv's variable in env, replacing an earlier value.
func setEnv(env []string, kv string) []string {
	name, _, _ := strings.Cut(kv, "=")
	out := env[:0:0]
	for _, e := range env {
		if n, _, _ := strings.Cut(e, "="); n != name {
			out = append(out, e)
		}
	}
	return append(out, kv)
}

func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if n, v, _ := strings.Cut(env[i], "="); n == name {
			return v, true
		}
	}
	return "", false
}

// writePrivate writes b to path (0600, in 0700 directories), replacing it
// whole so a concurrent run never reads half a file.
func writePrivate(path string, b []byte) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err = f.Write(b); err == nil {
		err = f.Close()
	} else {
		_ = f.Close()
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}
