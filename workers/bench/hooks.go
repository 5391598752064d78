package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/toolhook"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/runcred"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config/toolpolicy"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/toolcalls"
)

// HookOptions configure ampflow bench --hooks.
type HookOptions struct {
	// Calls is how many tool calls each path decides, one at a time.
	Calls int
	// HookBinary is ampflow-hook, which Codex and Gemini CLI run; empty
	// skips their paths.
	HookBinary string
	// Ampflow is the ampflow executable, for `ampflow hook`, the command
	// hook every CLI ran before; empty skips that path.
	Ampflow string
}

// HookPath is one way a CLI's tool call reaches the policy, measured.
type HookPath struct {
	// CLI is the CLI; Path how its hook reaches the API: http (Claude
	// Code's HTTP hook), plugin (OpenCode's plugin's fetch),
	// ampflow-hook, or ampflow hook (the command hook before).
	CLI  string `json:"cli"`
	Path string `json:"path"`
	// Calls were decided; P50MS and P99MS are the latencies of one call,
	// from the CLI's side, in milliseconds.
	Calls int     `json:"calls"`
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
}

// HookResult is what ampflow bench --hooks measured.
type HookResult struct {
	Calls int        `json:"calls"`
	Paths []HookPath `json:"paths"`
}

// The hooks' inputs, as the CLIs send them: Claude Code and Codex
// (PreToolUse), Gemini CLI (BeforeTool), ampflow's OpenCode plugin.
var hookInputs = map[string]map[string]any{
	"claude":   {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "go test ./...", "description": "run the tests"}, "cwd": "/work", "session_id": "s1"},
	"codex":    {"hook_event_name": "PreToolUse", "tool_name": "exec_command", "tool_input": map[string]any{"cmd": "go test ./..."}, "cwd": "/work", "session_id": "s1"},
	"gemini":   {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": map[string]any{"command": "go test ./..."}, "cwd": "/work", "session_id": "s1"},
	"opencode": {"hook_event_name": "tool.execute.before", "tool_name": "bash", "tool_input": map[string]any{"command": "go test ./..."}, "cwd": "/work", "session_id": "s1"},
}

// benchTask is the task the calls are for.
const benchTask = "T-2026-001"

// RunHooks measures the tool policy's hook on each CLI's path against the
// API served in this process, over loopback HTTP, with an allow rule that
// matches every call: the API's own route, authentication by a run's
// credential, the policy, and the answer in the CLI's format. The task's
// recording of each call is left out (it answers at once, in memory):
// the figures are the hook's cost, which is what differs between paths.
func RunHooks(ctx context.Context, o HookOptions) (HookResult, error) {
	if o.Calls <= 0 {
		return HookResult{}, errors.New("--hooks takes a number of calls above 0")
	}
	key := runcred.Key([]byte("ampflow bench --hooks: a decision key of its own"))
	// No rate limit: a run makes its calls one at a time, far below it.
	api := httpapi.New(httpapi.Options{Tasks: nil, RunKey: key, Rate: -1})
	pol, err := toolpolicy.New([]toolpolicy.Rule{{Name: "bench-allow", Tool: ".*", Action: toolpolicy.Allow, Reason: "the bench allows every call"}}, toolpolicy.Deny)
	if err != nil {
		return HookResult{}, err
	}
	toolcalls.Register(api, toolcalls.Options{Tasks: &allowingTask{}, Policy: pol, AskTimeout: time.Minute})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	cred, _, err := runcred.Mint(key, runcred.Claims{Task: benchTask, Role: amp.RoleExecutor, Agent: "bench", Expires: time.Now().Add(time.Hour).Unix()})
	if err != nil {
		return HookResult{}, err
	}
	env := append(os.Environ(), toolhook.EnvAPIURL+"="+srv.URL, toolhook.EnvAPIToken+"="+cred, toolhook.EnvTaskID+"="+benchTask, toolhook.EnvWorktree+"=/work")
	type path struct {
		cli, path string
		call      func(context.Context) error
	}
	paths := []path{
		{"claude", "http", post(srv.URL+"/v1/hooks/claude?worktree=%2Fwork", cred, hookInputs["claude"], "permissionDecision\":\"allow")},
		{"opencode", "plugin", post(srv.URL+"/v1/hooks/opencode?worktree=%2Fwork", cred, hookInputs["opencode"], "\"decision\":\"allow")},
	}
	if o.HookBinary != "" {
		paths = append(paths,
			path{"codex", "ampflow-hook", command(env, hookInputs["codex"], "{}", o.HookBinary, "codex")},
			path{"gemini", "ampflow-hook", command(env, hookInputs["gemini"], "\"decision\":\"allow", o.HookBinary, "gemini")})
	}
	if o.Ampflow != "" {
		paths = append(paths, path{"codex", "ampflow hook", command(env, hookInputs["codex"], "{}", o.Ampflow, "hook", "codex")})
	}
	r := HookResult{Calls: o.Calls}
	for _, p := range paths {
		ds := make([]time.Duration, 0, o.Calls)
		for range o.Calls {
			start := time.Now()
			if err := p.call(ctx); err != nil {
				return r, fmt.Errorf("%s through %s: %w", p.cli, p.path, err)
			}
			ds = append(ds, time.Since(start))
		}
		r.Paths = append(r.Paths, HookPath{CLI: p.cli, Path: p.path, Calls: len(ds), P50MS: ms(Percentile(ds, 50)), P99MS: ms(Percentile(ds, 99))})
	}
	return r, nil
}

// post is one request of Claude Code's HTTP hook or OpenCode's plugin: a
// new connection each, as a CLI that keeps none open would make it.
func post(url, cred string, in map[string]any, want string) func(context.Context) error {
	body, _ := json.Marshal(in)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+cred)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			return fmt.Errorf("answered %s: %s", resp.Status, b)
		}
		return nil
	}
}

// command runs a command hook as a CLI does: the call on its stdin, its
// answer on stdout.
func command(env []string, in map[string]any, want string, argv ...string) func(context.Context) error {
	body, _ := json.Marshal(in)
	return func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(body)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%v: %s", err, stderr.String())
		}
		if !strings.Contains(string(out), want) {
			return fmt.Errorf("answered %s", out)
		}
		return nil
	}
}

// allowingTask records each call as its task would, in memory, and
// answers the policy's decision at once.
type allowingTask struct {
	mu  sync.Mutex
	seq int
}

func (a *allowingTask) ToolCall(_ context.Context, taskID string, in task.ToolCall) (task.ToolCall, error) {
	a.mu.Lock()
	a.seq++
	in.ID = fmt.Sprintf("%s-tc%d", taskID, a.seq)
	a.mu.Unlock()
	in.TaskID, in.At, in.Decision, in.By = taskID, time.Now(), in.Action, task.ByPolicy
	return in, nil
}

// WriteText prints the figures for a person.
func (r HookResult) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "tool hook, %d calls a path, against the API in this process (goal: p50 < 5ms, p99 < 15ms)\n", r.Calls)
	fmt.Fprintf(&b, "  %-9s %-13s %9s %9s\n", "cli", "path", "p50 ms", "p99 ms")
	for _, p := range r.Paths {
		fmt.Fprintf(&b, "  %-9s %-13s %9.2f %9.2f\n", p.CLI, p.Path, p.P50MS, p.P99MS)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
