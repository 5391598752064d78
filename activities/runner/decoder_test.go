package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// summary renders events compactly for comparison.
func summary(evs []Event) []string {
	var out []string
	for _, e := range evs {
		s := string(e.Kind)
		switch e.Kind {
		case EventSession:
			if e.SessionID == "" {
				s += ":<empty>"
			}
		case EventText, EventError:
			s += ":" + firstLine(e.Text)
		case EventToolCall:
			s += ":" + e.Tool
			if e.File != "" {
				s += ":" + e.File
			}
		case EventToolResult:
			s += ":" + e.Tool + ":" + firstLine(e.Text)
			if e.IsError {
				s += ":error"
			}
		case EventResult:
			s += ":" + firstLine(e.Text)
			if e.IsError {
				s += ":error"
			}
			s += fmt.Sprintf(":in=%d,out=%d", e.Usage.InputTokens, e.Usage.OutputTokens)
			if e.Usage.CostReported {
				s += fmt.Sprintf(",usd=%.4f", e.Usage.CostUSD)
			}
		case EventUsage:
			s += fmt.Sprintf(":in=%d,out=%d,usd=%.4f", e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CostUSD)
		}
		out = append(out, s)
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// The streams in testdata were recorded from the real CLIs run against
// fakemodel (see agents_test.go); each is a run that commits a file through
// the shell tool, then a resumed run.
func TestDecodeRecorded(t *testing.T) {
	cases := []struct {
		runner, file string
		want         []string
	}{
		{Claude, "claude_commit.jsonl", []string{
			"session",
			"text:Writing and committing the file.",
			"tool_call:Bash",
			"tool_result:Bash:COMMITTED-42",
			"text:Done: hello.txt is committed.",
			"result:Done: hello.txt is committed.:in=220,out=25,usd=0.0014",
			"text:Resumed and still done.",
			"result:Resumed and still done.:in=100,out=10,usd=0.0006",
		}},
		{Codex, "codex_commit.jsonl", []string{
			"session",
			"text:Writing and committing the file.",
			"tool_call:command_execution",
			"tool_result:command_execution:COMMITTED-42",
			"text:Done: hello.txt is committed.",
			"result:Done: hello.txt is committed.:in=220,out=25",
			"session",
			"text:Resumed and still done.",
			"result:Resumed and still done.:in=320,out=35",
		}},
		{Gemini, "gemini_commit.jsonl", []string{
			"session",
			"text:Writing and committing the file.",
			"tool_call:run_shell_command",
			"tool_result:run_shell_command:COMMITTED-42",
			"text:Done: hello.txt is committed.",
			"result:Done: hello.txt is committed.:in=220,out=25",
			"session",
			"text:Resumed and still done.",
			"result:Resumed and still done.:in=100,out=10",
		}},
		{OpenCode, "opencode_commit.jsonl", []string{
			"session",
			"text:Writing and committing the file.",
			"tool_call:bash",
			"tool_result:bash:COMMITTED-42",
			"usage:in=100,out=10,usd=0.0004",
			"text:Done: hello.txt is committed.",
			"usage:in=120,out=15,usd=0.0006",
			"result:Done: hello.txt is committed.:in=0,out=0",
			"text:Resumed and still done.",
			"usage:in=100,out=10,usd=0.0004",
			"result:Resumed and still done.:in=0,out=0",
		}},
	}
	for _, c := range cases {
		t.Run(c.runner, func(t *testing.T) {
			stream, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			evs, err := Decode(c.runner, stream)
			if err != nil {
				t.Fatal(err)
			}
			got := summary(evs)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			for _, e := range evs {
				if len(e.Raw) == 0 {
					t.Errorf("event %s without its raw line", e.Kind)
				}
			}
		})
	}
}

// Streams that the end-to-end tests do not produce: errors, retries, other
// tool kinds.
func TestDecodeLines(t *testing.T) {
	cases := []struct {
		name, runner, stream string
		want                 []string
	}{
		{"claude api retry", Claude,
			`{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1186,"error_status":429,"error":"rate_limit","session_id":"s1"}`,
			[]string{"session", "error:api_retry: rate_limit (HTTP 429), attempt 2 of 10"}},
		{"claude error result", Claude,
			`{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Invalid API key · Please run /login","session_id":"s1","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}`,
			[]string{"session", "result:Invalid API key · Please run /login (HTTP 401):error:in=0,out=0,usd=0.0000"}},
		{"claude budget", Claude,
			`{"type":"result","subtype":"error_max_budget_usd","is_error":true,"session_id":"s1","total_cost_usd":1.25,"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":2}}`,
			[]string{"session", "result:error_max_budget_usd:error:in=15,out=2,usd=1.2500"}},
		{"claude edit", Claude,
			`{"type":"assistant","session_id":"s1","message":{"content":[{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"/w/a.go","content":"x"}}]}}
{"type":"user","session_id":"s1","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"denied"}],"is_error":true}]}}`,
			[]string{"session", "tool_call:Write:/w/a.go", "tool_result:Write:denied:error"}},
		{"codex failed turn", Codex,
			`{"type":"thread.started","thread_id":"th"}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"turn.failed","error":{"message":"You've hit your usage limit. Try again in 2 hours 5 minutes."}}`,
			[]string{"session", "error:Reconnecting... 1/5", "result:You've hit your usage limit. Try again in 2 hours 5 minutes.:error:in=0,out=0"}},
		{"codex file change", Codex,
			`{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"/w/a.go","kind":"add"}],"status":"completed"}}`,
			[]string{"tool_call:file_change:/w/a.go", "tool_result:file_change:completed"}},
		{"not json", Claude, "Loading...\n\n{not json", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, err := Decode(c.runner, []byte(c.stream))
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(evs); !reflect.DeepEqual(got, c.want) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestCommand(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"claude", Spec{Runner: Claude, Prompt: "do it"},
			// The prompt is the first line of its input (--input-format stream-json).
			"claude -p --input-format stream-json --output-format stream-json --replay-user-messages --verbose --setting-sources  --dangerously-skip-permissions"},
		{"claude all", Spec{Runner: Claude, Command: []string{"/bin/claude", "--debug"}, Model: "m", SessionID: "s",
			SystemPrompt: "sys", MaxCostUSD: 2.5, Prompt: "-p"},
			"/bin/claude --debug -p --input-format stream-json --output-format stream-json --replay-user-messages --verbose --model m --resume s --append-system-prompt sys --max-budget-usd 2.5 --setting-sources  --dangerously-skip-permissions"},
		{"codex", Spec{Runner: Codex, Prompt: "do it"},
			"codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -c check_for_update_on_startup=false -- do it"},
		{"codex resume", Spec{Runner: Codex, Model: "m", SystemPrompt: "say \"hi\"\n", SessionID: "th", Prompt: "more"},
			`codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -c check_for_update_on_startup=false -m m -c developer_instructions="say \"hi\"\n" resume th -- more`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Command(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Errorf("got  %s\nwant %s", s, c.want)
			}
		})
	}
	if _, err := Command(Spec{Runner: "aider", Prompt: "x"}); err == nil {
		t.Error("an unknown runner was accepted")
	}
	if _, err := Command(Spec{Runner: Claude, Prompt: strings.Repeat("x", 200<<10)}); err == nil {
		t.Error("a prompt over the argument limit was accepted")
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct{ runner, file string }{
		{Claude, "claude_commit.jsonl"},
		{Codex, "codex_commit.jsonl"},
		{Gemini, "gemini_commit.jsonl"},
		{OpenCode, "opencode_commit.jsonl"},
	} {
		b.Run(c.runner, func(b *testing.B) {
			stream, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			events := 0
			for b.Loop() {
				evs, _ := Decode(c.runner, stream)
				events += len(evs)
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
