package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ampflow/ampflow/amp/task"
)

// fakeToolAPI answers POST /v1/tool-calls with first, and GET
// /v1/tool-calls/{id} with then; it keeps what it was sent.
type fakeToolAPI struct {
	mu    sync.Mutex
	first task.ToolCall
	then  task.ToolCall
	got   []task.ToolCallRequest
	auth  []string
	gets  int
}

func (f *fakeToolAPI) serve(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/tool-calls":
			var in task.ToolCallRequest
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				t.Error(err)
			}
			f.got = append(f.got, in)
			_ = json.NewEncoder(w).Encode(f.first)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/tool-calls/"+f.first.ID:
			f.gets++
			_ = json.NewEncoder(w).Encode(f.then)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func readHookInput(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/hook/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHookClaude feeds the hook a PreToolUse payload recorded from Claude
// Code 2.1.332 (testdata/hook/claude_pretooluse.json).
func TestHookClaude(t *testing.T) {
	payload := readHookInput(t, "claude_pretooluse.json")
	t.Run("Denied", func(t *testing.T) {
		f := &fakeToolAPI{first: task.ToolCall{ID: "T-2026-001-tc1", Decision: task.ToolDeny, By: task.ByPolicy, Rule: "no-force-push", Reason: "force pushes are not allowed"}}
		env := map[string]string{"AMPFLOW_API_URL": f.serve(t), "AMPFLOW_API_TOKEN": "exec-token", "AMPFLOW_TASK_ID": "T-2026-001", "AMPFLOW_WORKTREE": "/work/wt"}
		r := run(t, payload, env, nil, "hook", "claude")
		if r.code != ExitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var out struct {
			H struct {
				Event    string `json:"hookEventName"`
				Decision string `json:"permissionDecision"`
				Reason   string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		if out.H.Event != "PreToolUse" || out.H.Decision != "deny" || !strings.Contains(out.H.Reason, "force pushes are not allowed") {
			t.Errorf("output %s", r.stdout)
		}
		if len(f.got) != 1 {
			t.Fatalf("%d requests", len(f.got))
		}
		g := f.got[0]
		if g.TaskID != "T-2026-001" || g.CLI != "claude" || g.Tool != "Bash" || g.CWD != "/tmp/TestRecord1680197066/001" || g.Worktree != "/work/wt" ||
			!strings.Contains(string(g.Input), "git push --force origin main") {
			t.Errorf("request %+v", g)
		}
		if f.auth[0] != "Bearer exec-token" {
			t.Errorf("Authorization %q", f.auth[0])
		}
	})
	t.Run("AskedThenAllowed", func(t *testing.T) {
		f := &fakeToolAPI{first: task.ToolCall{ID: "T-2026-001-tc2", Decision: task.ToolPending},
			then: task.ToolCall{ID: "T-2026-001-tc2", Decision: task.ToolAllow, By: "ops", Channel: "api", Rule: "ask-network"}}
		env := map[string]string{"AMPFLOW_API_URL": f.serve(t), "AMPFLOW_TASK_ID": "T-2026-001"}
		r := run(t, payload, env, nil, "hook", "claude")
		if r.code != ExitOK || !strings.Contains(r.stdout, `"permissionDecision":"allow"`) || !strings.Contains(r.stdout, "allowed by ops via api") {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if f.gets != 1 {
			t.Errorf("%d polls", f.gets)
		}
	})
	t.Run("DefaultAllowDefers", func(t *testing.T) {
		f := &fakeToolAPI{first: task.ToolCall{ID: "T-2026-001-tc3", Decision: task.ToolAllow, By: task.ByPolicy}}
		env := map[string]string{"AMPFLOW_API_URL": f.serve(t), "AMPFLOW_TASK_ID": "T-2026-001"}
		if r := run(t, payload, env, nil, "hook", "claude"); r.code != ExitOK || strings.TrimSpace(r.stdout) != "{}" {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("NoTaskDenies", func(t *testing.T) {
		r := run(t, payload, map[string]string{"AMPFLOW_API_URL": closedURL(t)}, nil, "hook", "claude")
		if r.code != ExitOK || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) || !strings.Contains(r.stdout, "AMPFLOW_TASK_ID") {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("UnreachableDenies", func(t *testing.T) {
		r := run(t, payload, map[string]string{"AMPFLOW_API_URL": closedURL(t), "AMPFLOW_TASK_ID": "T-2026-001"}, nil, "hook", "claude")
		if r.code != ExitOK || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
			t.Errorf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})
}

func TestHookFormats(t *testing.T) {
	f := &fakeToolAPI{first: task.ToolCall{ID: "T-2026-001-tc1", Decision: task.ToolDeny, By: task.ByPolicy, Rule: "ask-network", Reason: "nobody answered"}}
	env := map[string]string{"AMPFLOW_API_URL": f.serve(t), "AMPFLOW_TASK_ID": "T-2026-001"}
	r := run(t, readHookInput(t, "gemini_beforetool.json"), env, nil, "hook", "gemini")
	var g struct{ Decision, Reason string }
	if err := json.Unmarshal([]byte(r.stdout), &g); err != nil || g.Decision != "deny" || !strings.Contains(g.Reason, "nobody answered") {
		t.Errorf("gemini: %s (%v)", r.stdout, err)
	}
	if f.got[0].Tool != "run_shell_command" || f.got[0].CLI != "gemini" {
		t.Errorf("gemini request %+v", f.got[0])
	}
	// What ampflow's OpenCode plugin writes (delivery.OpenCodeHookPlugin),
	// as OpenCode 1.18.33 gave it the bash tool's call.
	r = run(t, readHookInput(t, "opencode_tool_execute_before.json"), env, nil, "hook", "opencode")
	var o struct{ Decision, Reason string }
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || o.Decision != "deny" || !strings.Contains(o.Reason, "nobody answered") {
		t.Errorf("opencode: %s (%v)", r.stdout, err)
	}
	if g := f.got[1]; g.Tool != "bash" || g.CLI != "opencode" || g.CWD != "/tmp/TestProtoOpenCode624788818/004" || !strings.Contains(string(g.Input), `"command":"git push --force origin main"`) {
		t.Errorf("opencode request %+v", g)
	}
	denied := f.first
	f.first = task.ToolCall{ID: "T-2026-001-tc2", Decision: task.ToolAllow, By: task.ByPolicy}
	if r := run(t, readHookInput(t, "opencode_tool_execute_before.json"), env, nil, "hook", "opencode"); strings.TrimSpace(r.stdout) != "{}" {
		t.Errorf("opencode, allowed by default: %s", r.stdout)
	}
	f.first = denied
	r = run(t, readHookInput(t, "claude_pretooluse.json"), env, nil, "hook", "codex")
	if !strings.Contains(r.stdout, `"permissionDecision":"deny"`) {
		t.Errorf("codex: %s", r.stdout)
	}
	if r := run(t, "", nil, nil, "hook", "opencode", "--plugin", "--max-wait", "5m"); r.code != ExitOK ||
		!strings.Contains(r.stdout, `"/v1/hooks/opencode?"`) || !strings.Contains(r.stdout, "const timeoutMs = 360000") {
		t.Errorf("hook opencode --plugin: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "", nil, nil, "hook", "gemini", "--plugin"); r.code != ExitUsage {
		t.Errorf("hook gemini --plugin: exit %d", r.code)
	}
	if r := run(t, "{}", env, nil, "hook", "cursor"); r.code != ExitUsage {
		t.Errorf("an unknown CLI: exit %d", r.code)
	}
}
