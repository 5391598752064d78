package runner

import (
	"testing"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// codexCase points Codex at the fake with a custom model provider given as
// -c overrides, and a CODEX_HOME of its own. A model slug Codex knows keeps it
// from warning about missing model metadata.
var codexCase = agentCase{
	runner: Codex,
	spec: func(t *testing.T, fake *fakemodel.Server) Spec {
		return Spec{
			Runner: Codex,
			Command: []string{agentsBin(t, "codex"),
				"-c", "model_provider=fake",
				"-c", `model_providers.fake={name="fake",base_url="` + fake.URL() + `/v1",env_key="FAKE_OPENAI_KEY",wire_api="responses"}`,
			},
			Model: "gpt-5.5",
			Env: append(baseEnv(t),
				"CODEX_HOME="+t.TempDir(),
				"FAKE_OPENAI_KEY=sk-test-secret-value",
			),
		}
	},
	shell: func(command string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": command}}
	},
}

func TestCodexCommitAndResume(t *testing.T) {
	testCommitAndResume(t, codexCase, "codex_commit.jsonl")
}

func TestCodexIdleKill(t *testing.T) {
	testIdleKill(t, codexCase)
}

func TestCodexFailingCommand(t *testing.T) {
	testFailingCommand(t, codexCase, "codex_exit.jsonl", true)
}
