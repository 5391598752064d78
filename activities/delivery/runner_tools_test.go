package delivery

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
)

func TestToolHook(t *testing.T) {
	h := &ToolHook{Binary: "/opt/amp flow/ampflow", HookBinary: "/opt/amp flow/ampflow-hook", APIURL: "http://127.0.0.1:7480",
		AskTimeout: 10 * time.Minute}
	t.Run("Claude", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Claude, Dir: "/data/worktrees/T-2026-001"}
		if !h.apply(&spec, "T-2026-001", "exec-token") {
			t.Fatal("no hook")
		}
		var s struct {
			Hooks struct {
				PreToolUse []struct {
					Matcher string
					Hooks   []struct {
						Type, Command string
						Timeout       int
					}
				}
			}
		}
		if err := json.Unmarshal([]byte(spec.Settings), &s); err != nil {
			t.Fatal(err)
		}
		pre := s.Hooks.PreToolUse
		if len(pre) != 1 || pre[0].Matcher != "*" || len(pre[0].Hooks) != 1 || pre[0].Hooks[0].Command != `'/opt/amp flow/ampflow-hook' claude` || pre[0].Hooks[0].Timeout != 660 {
			t.Errorf("settings %s", spec.Settings)
		}
		for _, want := range []string{"AMPFLOW_API_URL=http://127.0.0.1:7480", "AMPFLOW_API_TOKEN=exec-token", "AMPFLOW_TASK_ID=T-2026-001", "AMPFLOW_WORKTREE=/data/worktrees/T-2026-001"} {
			if !slices.Contains(spec.Env, want) {
				t.Errorf("env %v has no %s", spec.Env, want)
			}
		}
	})
	t.Run("ClaudeHTTP", func(t *testing.T) {
		c := *h
		c.HTTP = true
		spec := runner.Spec{Runner: runner.Claude, Dir: "/data/worktrees/T-2026-001"}
		if !c.apply(&spec, "T-2026-001", "exec-token") {
			t.Fatal("no hook")
		}
		var s struct {
			Hooks struct {
				PreToolUse []struct {
					Hooks []struct {
						Type, URL, OnFailure string
						Headers              map[string]string
						AllowedEnvVars       []string
						Timeout              int
					}
				}
			}
		}
		if err := json.Unmarshal([]byte(spec.Settings), &s); err != nil || len(s.Hooks.PreToolUse) != 1 || len(s.Hooks.PreToolUse[0].Hooks) != 1 {
			t.Fatalf("%v: %s", err, spec.Settings)
		}
		hk := s.Hooks.PreToolUse[0].Hooks[0]
		// The credential is read from the run's environment, never
		// written into its command line; a failed request blocks.
		if hk.Type != "http" || hk.URL != "http://127.0.0.1:7480/v1/hooks/claude?worktree=%2Fdata%2Fworktrees%2FT-2026-001" ||
			hk.OnFailure != "block" || hk.Headers["Authorization"] != "Bearer $AMPFLOW_API_TOKEN" ||
			!slices.Equal(hk.AllowedEnvVars, []string{"AMPFLOW_API_TOKEN"}) || hk.Timeout != 660 || strings.Contains(spec.Settings, "exec-token") {
			t.Errorf("settings %s", spec.Settings)
		}
		if !slices.Contains(spec.Env, "AMPFLOW_API_TOKEN=exec-token") {
			t.Errorf("env %v", spec.Env)
		}
	})
	t.Run("NoCredentialNoHook", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Claude}
		if h.apply(&spec, "T-2026-001", "") || spec.Settings != "" || len(spec.Env) != 0 {
			t.Errorf("a run without a credential got the hook: %v", spec.Env)
		}
	})
	t.Run("Codex", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Codex, Dir: "/data/worktrees/T-2026-001", Prompt: "go"}
		if !h.apply(&spec, "T-2026-001", "exec-token") || spec.Settings != "" {
			t.Fatal("no codex hook")
		}
		argv, err := runner.Command(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := `hooks={PreToolUse=[{matcher="*",hooks=[{type="command",command="'/opt/amp flow/ampflow-hook' codex",timeout=660}]}]}`
		if i := slices.Index(argv, want); i < 2 || argv[i-1] != "-c" || argv[i-2] != "--dangerously-bypass-hook-trust" {
			t.Errorf("argv %q", argv)
		}
		if !slices.Contains(spec.Env, "AMPFLOW_API_TOKEN=exec-token") {
			t.Errorf("env %v", spec.Env)
		}
	})
	t.Run("GeminiAndOpenCodeNeedTheirFiles", func(t *testing.T) {
		for _, r := range []string{runner.Gemini, runner.OpenCode} {
			spec := runner.Spec{Runner: r}
			if h.apply(&spec, "T-2026-001", "exec-token") || len(spec.Env) != 0 {
				t.Errorf("%s got a hook without its file: %v", r, spec.Env)
			}
		}
		var none *ToolHook
		if none.apply(&runner.Spec{Runner: runner.Claude}, "T-2026-001", "exec-token") {
			t.Error("a nil hook applied")
		}
	})
	t.Run("Gemini", func(t *testing.T) {
		g := *h
		g.GeminiSettings = "/data/tools/gemini-settings.json"
		spec := runner.Spec{Runner: runner.Gemini, Dir: "/data/worktrees/T-2026-001", Env: []string{"GEMINI_CLI_SYSTEM_SETTINGS_PATH=/etc/theirs.json"}}
		if !g.apply(&spec, "T-2026-001", "exec-token") {
			t.Fatal("no gemini hook")
		}
		for _, want := range []string{"GEMINI_CLI_SYSTEM_SETTINGS_PATH=/data/tools/gemini-settings.json", "AMPFLOW_API_TOKEN=exec-token", "AMPFLOW_TASK_ID=T-2026-001", "AMPFLOW_WORKTREE=/data/worktrees/T-2026-001"} {
			if !slices.Contains(spec.Env, want) {
				t.Errorf("env %v has no %s", spec.Env, want)
			}
		}
		if slices.Contains(spec.Env, "GEMINI_CLI_SYSTEM_SETTINGS_PATH=/etc/theirs.json") {
			t.Errorf("the agent's settings path stayed: %v", spec.Env)
		}
	})
	t.Run("OpenCode", func(t *testing.T) {
		o := *h
		o.OpenCodePlugin = "/data/amp flow/tools/opencode-tool-policy.js"
		spec := runner.Spec{Runner: runner.OpenCode, Env: []string{`OPENCODE_CONFIG_CONTENT={"model":"fake/m","plugin":["theirs"]}`}}
		if !o.apply(&spec, "T-2026-001", "exec-token") {
			t.Fatal("no opencode hook")
		}
		want := `OPENCODE_CONFIG_CONTENT={"model":"fake/m","plugin":["theirs","file:///data/amp%20flow/tools/opencode-tool-policy.js"]}`
		if !slices.Contains(spec.Env, want) || !slices.Contains(spec.Env, "AMPFLOW_API_TOKEN=exec-token") {
			t.Errorf("env %v", spec.Env)
		}
		bad := runner.Spec{Runner: runner.OpenCode, Env: []string{"OPENCODE_CONFIG_CONTENT={"}}
		if o.apply(&bad, "T-2026-001", "exec-token") {
			t.Error("a hook over an OPENCODE_CONFIG_CONTENT that is not JSON")
		}
	})
}

func TestToolHookPrepare(t *testing.T) {
	h := &ToolHook{Binary: "/opt/amp'flow/ampflow", AskTimeout: 10 * time.Minute}
	dir := t.TempDir()
	err := h.Prepare(dir)
	js, rerr := os.ReadFile(h.OpenCodePlugin)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, want := range []string{"const timeoutMs = 660000", `"/v1/hooks/opencode?"`, "await fetch(url", "env.AMPFLOW_API_TOKEN", `"tool.execute.before"`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("the plugin has no %s:\n%s", want, js)
		}
	}
	var s struct {
		HooksConfig struct{ Enabled bool }
		Hooks       struct {
			BeforeTool []struct {
				Matcher string
				Hooks   []struct {
					Type, Name, Command string
					Timeout             int
				}
			}
		}
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "gemini-settings.json"))
	if rerr != nil || json.Unmarshal(b, &s) != nil {
		t.Fatalf("%v: %s", rerr, b)
	}
	bt := s.Hooks.BeforeTool
	if !s.HooksConfig.Enabled || len(bt) != 1 || bt[0].Matcher != ".*" || len(bt[0].Hooks) != 1 ||
		bt[0].Hooks[0].Command != `'/opt/amp'\''flow/ampflow' hook gemini` || bt[0].Hooks[0].Timeout != 660000 || bt[0].Hooks[0].Name != GeminiHookName {
		t.Errorf("gemini settings %s", b)
	}
	// Where others may write above the file (t.TempDir under /tmp, say),
	// Gemini CLI would skip it: Gemini runners get no hook, and Prepare
	// says why.
	if rootOnly(dir) != nil {
		if err == nil || h.GeminiSettings != "" || !strings.Contains(err.Error(), "Gemini CLI would skip") {
			t.Errorf("Prepare under a shared directory: %v, settings %q", err, h.GeminiSettings)
		}
	} else if err != nil || h.GeminiSettings != filepath.Join(dir, "gemini-settings.json") {
		t.Errorf("Prepare: %v, settings %q", err, h.GeminiSettings)
	}
}
