package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// opencodeCase points OpenCode at the fake through a config file (named by
// OPENCODE_CONFIG, outside the repository) that declares an
// OpenAI-compatible provider with the fake's base URL and a priced model, so
// OpenCode reports step costs. OPENCODE_DISABLE_MODELS_FETCH keeps it from
// fetching its model catalogue.
var opencodeCase = agentCase{
	runner: OpenCode,
	spec: func(t *testing.T, fake *fakemodel.Server) Spec {
		bin := agentsBin(t, "opencode")
		config := map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"provider": map[string]any{"fake": map[string]any{
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "Fake",
				"options": map[string]any{"baseURL": fake.URL() + "/v1", "apiKey": "{env:FAKE_OPENCODE_KEY}"},
				"models": map[string]any{"fake-model": map[string]any{
					"name": "Fake Model",
					"cost": map[string]any{"input": 3, "output": 15},
				}},
			}},
			"autoupdate": false,
			"share":      "disabled",
		}
		b, _ := json.Marshal(config)
		path := filepath.Join(t.TempDir(), "opencode.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return Spec{
			Runner:  OpenCode,
			Command: []string{bin},
			Model:   "fake/fake-model",
			Env: append(baseEnv(t),
				"OPENCODE_CONFIG="+path,
				"OPENCODE_DISABLE_MODELS_FETCH=1",
				"OPENCODE_DISABLE_AUTOUPDATE=1",
				"FAKE_OPENCODE_KEY=test-secret-opencode-key",
			),
		}
	},
	shell: func(command string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": command, "description": "Commit hello.txt"}}
	},
	costReported: true,
}

func TestOpenCodeCommitAndResume(t *testing.T) {
	testCommitAndResume(t, opencodeCase, "opencode_commit.jsonl")
}

func TestOpenCodeIdleKill(t *testing.T) {
	testIdleKill(t, opencodeCase)
}

func TestOpenCodeFailingCommand(t *testing.T) {
	testFailingCommand(t, opencodeCase, "opencode_exit.jsonl", true)
}
