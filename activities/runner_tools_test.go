package activities

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

func TestToolHook(t *testing.T) {
	h := &ToolHook{Binary: "/opt/amp flow/ampflow", APIURL: "http://127.0.0.1:7480",
		Tokens: map[amp.Role]string{amp.RoleExecutor: "exec-token"}, AskTimeout: 10 * time.Minute}
	t.Run("Claude", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Claude, Dir: "/data/worktrees/T-2026-001"}
		if !h.apply(&spec, amp.RoleExecutor, "T-2026-001") {
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
		if len(pre) != 1 || pre[0].Matcher != "*" || len(pre[0].Hooks) != 1 || pre[0].Hooks[0].Command != `'/opt/amp flow/ampflow' hook claude` || pre[0].Hooks[0].Timeout != 660 {
			t.Errorf("settings %s", spec.Settings)
		}
		for _, want := range []string{"AMPFLOW_API_URL=http://127.0.0.1:7480", "AMPFLOW_API_TOKEN=exec-token", "AMPFLOW_TASK_ID=T-2026-001", "AMPFLOW_WORKTREE=/data/worktrees/T-2026-001"} {
			if !slices.Contains(spec.Env, want) {
				t.Errorf("env %v has no %s", spec.Env, want)
			}
		}
	})
	t.Run("NoTokenNoHook", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Claude}
		if h.apply(&spec, amp.RoleReviewer, "T-2026-001") || spec.Settings != "" {
			t.Error("a role without a token got the hook of a tokened API")
		}
		open := *h
		open.Open = true
		if !open.apply(&spec, amp.RoleReviewer, "T-2026-001") || slices.ContainsFunc(spec.Env, func(e string) bool { return strings.HasPrefix(e, "AMPFLOW_API_TOKEN=") }) {
			t.Errorf("open API: %v", spec.Env)
		}
	})
	t.Run("Codex", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Codex, Dir: "/data/worktrees/T-2026-001", Prompt: "go"}
		if !h.apply(&spec, amp.RoleExecutor, "T-2026-001") || spec.Settings != "" {
			t.Fatal("no codex hook")
		}
		argv, err := runner.Command(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := `hooks={PreToolUse=[{matcher="*",hooks=[{type="command",command="'/opt/amp flow/ampflow' hook codex",timeout=660}]}]}`
		if i := slices.Index(argv, want); i < 2 || argv[i-1] != "-c" || argv[i-2] != "--dangerously-bypass-hook-trust" {
			t.Errorf("argv %q", argv)
		}
		if !slices.Contains(spec.Env, "AMPFLOW_API_TOKEN=exec-token") {
			t.Errorf("env %v", spec.Env)
		}
	})
	t.Run("OtherRunners", func(t *testing.T) {
		spec := runner.Spec{Runner: runner.Gemini}
		if h.apply(&spec, amp.RoleExecutor, "T-2026-001") {
			t.Error("gemini got a hook")
		}
		var none *ToolHook
		if none.apply(&spec, amp.RoleExecutor, "T-2026-001") {
			t.Error("a nil hook applied")
		}
	})
}
