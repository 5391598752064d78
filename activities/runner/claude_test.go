package runner

import (
	"testing"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// claudeCase points Claude Code at the fake with ANTHROPIC_BASE_URL; as root
// it needs IS_SANDBOX=1 to accept --dangerously-skip-permissions.
var claudeCase = agentCase{
	runner: Claude,
	spec: func(t *testing.T, fake *fakemodel.Server) Spec {
		return Spec{
			Runner:  Claude,
			Command: []string{agentsBin(t, "claude")},
			Env: append(baseEnv(t),
				"ANTHROPIC_BASE_URL="+fake.URL(),
				"ANTHROPIC_API_KEY=sk-ant-test-secret-value",
				"IS_SANDBOX=1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
				"DISABLE_AUTOUPDATER=1",
			),
		}
	},
	shell: func(command string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": command, "description": "Commit hello.txt"}}
	},
	costReported: true,
}

func TestClaudeCommitAndResume(t *testing.T) {
	testCommitAndResume(t, claudeCase, "claude_commit.jsonl")
}

func TestClaudeIdleKill(t *testing.T) {
	testIdleKill(t, claudeCase)
}

func TestClaudeFailingCommand(t *testing.T) {
	testFailingCommand(t, claudeCase, "claude_exit.jsonl", true)
}
