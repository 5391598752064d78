package workers

import (
	"strings"
	"testing"
	"time"

	"context"

	"github.com/ampflow/ampflow/config"
)

func TestAgentModes(t *testing.T) {
	got, _ := AgentModes(context.Background(), config.Agents{
		Executor: config.Agent{Mode: config.AgentModeCommand, Command: []string{"python3", "my agent.py"}, Timeout: 30 * time.Minute},
		Reviewer: config.Agent{Mode: config.AgentModePull},
	})
	want := [][2]string{
		{"executor", `command python3 "my agent.py" (timeout 30m)`},
		{"reviewer", "pull (reads its inbox through the CLI or the HTTP API)"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("AgentModes = %q, want %q", got, want)
	}
	hook, _ := AgentModes(context.Background(), config.Agents{Executor: config.Agent{Mode: config.AgentModeWebhook, WebhookURL: "https://a.example/amp", WebhookSecret: "s"}})
	if hook[0][1] != "webhook https://a.example/amp (signed)" {
		t.Errorf("webhook line %q", hook[0][1])
	}
}

// TestAgentModesSandbox: a runner's line says whether it runs sandboxed;
// off says so plainly; where bubblewrap cannot be found, the worker
// refuses the runner and names the setting to change.
func TestAgentModesSandbox(t *testing.T) {
	ctx := context.Background()
	echo := config.Agent{Mode: config.AgentModeRunner, Runner: "codex", Command: []string{"/bin/echo"}}
	got, err := AgentModes(ctx, config.Agents{Executor: echo})
	if err != nil || !strings.HasSuffix(got[0][1], ", sandboxed") {
		t.Errorf("sandbox on: %q, %v", got, err)
	}
	off := echo
	off.Sandbox = config.SandboxOff
	got, err = AgentModes(ctx, config.Agents{Executor: off})
	if err != nil || !strings.Contains(got[0][1], "NOT sandboxed: agents.executor.sandbox is off") {
		t.Errorf("sandbox off: %q, %v", got, err)
	}
	t.Setenv("PATH", t.TempDir()) // no bwrap
	if _, err := AgentModes(ctx, config.Agents{Executor: echo}); err == nil ||
		!strings.Contains(err.Error(), "agents.executor.sandbox") || !strings.Contains(err.Error(), "set agents.executor.sandbox: off") {
		t.Errorf("no bubblewrap: %v, want a refusal naming agents.executor.sandbox", err)
	}
	if _, err := AgentModes(ctx, config.Agents{Executor: off}); err != nil {
		t.Errorf("no bubblewrap, sandbox off: %v", err)
	}
	if w := SandboxWarnings(config.Agents{Executor: off, Reviewer: echo}); len(w) != 1 || !strings.HasPrefix(w[0], "agents.executor.sandbox is off") {
		t.Errorf("SandboxWarnings = %q, want the executor's", w)
	}
	if w := SandboxWarnings(config.Agents{Executor: echo, Reviewer: echo}); len(w) != 0 {
		t.Errorf("SandboxWarnings with every runner sandboxed = %q", w)
	}
}
