package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeExitCodes replays the recorded runs of a command that prints
// FAILING-OUT and exits 3 (testFailingCommand), and of one that succeeds
// (the commit streams): each tool result has the command's exit code
// where the CLI's stream says it.
func TestDecodeExitCodes(t *testing.T) {
	for _, c := range []struct {
		runner, file string
		// want is the exit code of the first shell result; -1 is none.
		want    int
		isError bool
	}{
		{Claude, "claude_exit.jsonl", 3, true},
		{Codex, "codex_exit.jsonl", 3, true},
		{OpenCode, "opencode_exit.jsonl", 3, true},
		{Gemini, "gemini_exit.jsonl", -1, false},
		{Claude, "claude_commit.jsonl", 0, false},
		{Codex, "codex_commit.jsonl", 0, false},
		{OpenCode, "opencode_commit.jsonl", 0, false},
		{Gemini, "gemini_commit.jsonl", -1, false},
	} {
		t.Run(c.file, func(t *testing.T) {
			stream, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			evs, err := Decode(c.runner, stream)
			if err != nil {
				t.Fatal(err)
			}
			var res *Event
			for i := range evs {
				if evs[i].Kind == EventToolResult {
					res = &evs[i]
					break
				}
			}
			switch {
			case res == nil:
				t.Fatal("no tool result")
			case c.want < 0 && res.ExitCode != nil:
				t.Errorf("exit code %d, want none", *res.ExitCode)
			case c.want >= 0 && (res.ExitCode == nil || *res.ExitCode != c.want):
				t.Errorf("exit code %v, want %d", res.ExitCode, c.want)
			case res.IsError != c.isError:
				t.Errorf("IsError %v, want %v", res.IsError, c.isError)
			}
			if strings.HasSuffix(c.file, "_exit.jsonl") && !strings.Contains(res.Text, "FAILING-OUT") {
				t.Errorf("result text %q lacks the output", res.Text)
			}
		})
	}
}

func TestClaudeExit(t *testing.T) {
	for _, c := range []struct {
		tool, text string
		isError    bool
		want       int // -1: none
	}{
		{"Bash", "Exit code 127\nsh: go: not found", true, 127},
		{"Bash", "Error: Exit code 2\n", true, 2},
		{"Bash", "ok", false, 0},
		{"Bash", "Command timed out", true, -1},
		{"Read", "Exit code 3", true, -1},
	} {
		got := claudeExit(c.tool, c.text, c.isError)
		if (c.want < 0) != (got == nil) || (got != nil && *got != c.want) {
			t.Errorf("claudeExit(%q, %q, %v) = %v, want %d", c.tool, c.text, c.isError, got, c.want)
		}
	}
}
