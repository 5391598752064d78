package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
)

// geminiCase points Gemini CLI at the fake with GOOGLE_GEMINI_BASE_URL. With
// a base URL in its environment it picks the "gateway" auth type, which its
// own non-interactive check then rejects ("Invalid auth method selected"), so
// its user settings (under HOME, not the repository) select gemini-api-key;
// that auth type reads GOOGLE_GEMINI_BASE_URL too.
var geminiCase = agentCase{
	runner: Gemini,
	spec: func(t *testing.T, fake *fakemodel.Server) Spec {
		bin := agentsBin(t, "gemini")
		env := baseEnv(t)
		home := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "HOME="); ok {
				home = v
			}
		}
		settings := filepath.Join(home, ".gemini", "settings.json")
		if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(settings, []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		return Spec{
			Runner:  Gemini,
			Command: []string{bin},
			Model:   "gemini-2.5-pro",
			Env: append(env,
				"GEMINI_API_KEY=test-secret-gemini-key",
				"GOOGLE_GEMINI_BASE_URL="+fake.URL(),
				"GEMINI_CLI_TRUST_WORKSPACE=true",
			),
		}
	},
	shell: func(command string) *fakemodel.ToolCall {
		return &fakemodel.ToolCall{Name: "run_shell_command", Input: map[string]any{"command": command}}
	},
}

func TestGeminiCommitAndResume(t *testing.T) {
	testCommitAndResume(t, geminiCase, "gemini_commit.jsonl")
}

func TestGeminiIdleKill(t *testing.T) {
	testIdleKill(t, geminiCase)
}

func TestGeminiFailingCommand(t *testing.T) {
	testFailingCommand(t, geminiCase, "gemini_exit.jsonl", false)
}
