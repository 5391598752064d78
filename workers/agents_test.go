package workers

import (
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
