package delivery

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

func TestRunnerMCP(t *testing.T) {
	m := &RunnerMCP{URL: "http://127.0.0.1:7480/mcp"}
	t.Run("Claude", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Claude, Env: []string{"HOME=/h", "AMPFLOW_API_TOKEN=old"}}
		if ok, err := m.apply(&spec, amp.RoleExecutor, "exec-secret", t.TempDir()); !ok || err != nil {
			t.Fatal(ok, err)
		}
		argv, err := runner.Command(spec)
		if err != nil {
			t.Fatal(err)
		}
		if argv[1] != "--mcp-config" || !strings.Contains(argv[2], "${AMPFLOW_API_TOKEN}") || strings.Contains(strings.Join(argv, " "), "exec-secret") {
			t.Errorf("argv %q", argv)
		}
		if !slices.Equal(spec.Env, []string{"HOME=/h", "AMPFLOW_API_TOKEN=exec-secret"}) {
			t.Errorf("env %q", spec.Env)
		}
	})
	t.Run("Gemini", func(t *testing.T) {
		dir := t.TempDir()
		spec := runner.Spec{Runner: runner.Gemini}
		if ok, err := m.apply(&spec, amp.RoleExecutor, "exec-secret", dir); !ok || err != nil {
			t.Fatal(ok, err)
		}
		path := filepath.Join(dir, "mcp", "executor.gemini.json")
		if !slices.Contains(spec.Env, envGeminiDefaults+"="+path) {
			t.Errorf("env %q", spec.Env)
		}
		fi, err := os.Stat(path)
		b, _ := os.ReadFile(path)
		if err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(string(b), `"httpUrl":"http://127.0.0.1:7480/mcp"`) || strings.Contains(string(b), "exec-secret") {
			t.Errorf("settings file %v %v: %s", fi.Mode(), err, b)
		}
	})
	t.Run("OpenCodeMerged", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.OpenCode, Env: []string{`OPENCODE_CONFIG_CONTENT={"model":"fake/m","mcp":{"other":{"type":"local"}}}`}}
		if ok, err := m.apply(&spec, amp.RoleExecutor, "exec-secret", t.TempDir()); !ok || err != nil {
			t.Fatal(ok, err)
		}
		v, _ := lookupEnv(spec.Env, envOpenCodeContent)
		if !strings.Contains(v, `"model":"fake/m"`) || !strings.Contains(v, `"other"`) || !strings.Contains(v, `"ampflow"`) || strings.Count(strings.Join(spec.Env, "\n"), envOpenCodeContent) != 1 {
			t.Errorf("env %q", spec.Env)
		}
	})
	t.Run("NoCredential", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Codex}
		if ok, _ := m.apply(&spec, amp.RoleReviewer, "", t.TempDir()); ok || spec.Args != nil || spec.Env != nil {
			t.Errorf("a run without a credential got the server: %q %q", spec.Args, spec.Env)
		}
	})
}

// TestRunnerMCPAgentKey: each role's run presents its own gate agent's
// key to the MCP server, by reference in the CLI's configuration and by
// value only in its environment; a role without one gets none.
func TestRunnerMCPAgentKey(t *testing.T) {
	m := &RunnerMCP{URL: "http://127.0.0.1:7480/mcp",
		AgentKeys: map[amp.Role]string{amp.RoleExecutor: "rs-amp-exec-gate-0123456789"}}
	spec := runner.Spec{Runner: runner.Claude}
	if ok, err := m.apply(&spec, amp.RoleExecutor, "exec-secret", t.TempDir()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	argv, err := runner.Command(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(argv[2], `"X-Ampflow-Agent-Key":"${AMPFLOW_AGENT_KEY}"`) || strings.Contains(strings.Join(argv, " "), "rs-amp-exec-gate") {
		t.Errorf("argv %q", argv)
	}
	if !slices.Contains(spec.Env, runner.MCPAgentKeyEnv+"=rs-amp-exec-gate-0123456789") {
		t.Errorf("the executor's env %q lacks its gate key", spec.Env)
	}
	for _, r := range []string{runner.Claude, runner.Codex, runner.Gemini, runner.OpenCode} {
		spec := runner.Spec{Runner: r}
		if ok, err := m.apply(&spec, amp.RoleReviewer, "rev-secret", t.TempDir()); !ok || err != nil {
			t.Fatal(ok, err)
		}
		all := strings.Join(append(spec.Args, spec.Env...), "\n")
		if strings.Contains(all, "rs-amp-exec-gate") || strings.Contains(all, runner.MCPAgentKeyEnv) || strings.Contains(all, "X-Ampflow-Agent-Key") {
			t.Errorf("%s: the reviewer got the executor's gate key: %q", r, all)
		}
	}
}
