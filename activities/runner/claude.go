package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// claudeFormat is Claude Code's print mode with a stream of user turns on
// its standard input:
//
//	claude -p --input-format stream-json --output-format stream-json --replay-user-messages --verbose
//	  [--model M] [--resume ID] [--append-system-prompt S] [--max-budget-usd N]
//	  [--settings JSON] --setting-sources "" --dangerously-skip-permissions
//
// The prompt is the first turn, one JSON line:
// {"type":"user","message":{"role":"user","content":[{"type":"text","text":…}]}}.
// The CLI echoes each turn as it takes it (--replay-user-messages): a
// turn written while one runs is folded into it at its next model request
// (after tool results), or starts a turn of its own after its result. Each
// turn ends with a result; the CLI exits once its input is closed and its
// last turn has its result.
//
// Its stream is one JSON object a line: system/init (session id, tools),
// system/api_retry while it retries a failed request, assistant messages with
// text and tool_use blocks, user messages with tool_result blocks, and a last
// result object with the run's usage and total_cost_usd. Running as root it
// refuses --dangerously-skip-permissions unless IS_SANDBOX=1 is in its
// environment.
type claudeFormat struct{}

func (claudeFormat) args(s Spec) []string {
	a := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--replay-user-messages", "--verbose"}
	if s.Model != "" {
		a = append(a, "--model", s.Model)
	}
	if s.SessionID != "" {
		a = append(a, "--resume", s.SessionID)
	}
	if s.SystemPrompt != "" {
		a = append(a, "--append-system-prompt", s.SystemPrompt)
	}
	if s.MaxCostUSD > 0 {
		a = append(a, "--max-budget-usd", strconv.FormatFloat(s.MaxCostUSD, 'f', -1, 64))
	}
	if s.Settings != "" {
		a = append(a, "--settings", s.Settings)
	}
	// No settings file is read: not the HOME's, which the agent may write,
	// nor the checkout's, which the executor commits and the reviewer
	// checks out. Only --settings (the tool policy's hook) applies, so
	// nothing the agent writes switches the hook off or adds a hook of its
	// own, in this run or a later one.
	a = append(a, "--setting-sources", "")
	return append(a, "--dangerously-skip-permissions")
}

// turn is one user turn as a line of Claude Code's input.
func (claudeFormat) turn(text string) []byte {
	b, _ := json.Marshal(claudeTurn{Type: "user", Message: claudeTurnMessage{Role: "user",
		Content: []claudeText{{Type: "text", Text: text}}}})
	return append(b, '\n')
}

// taken reports whether line is the echo of a user turn: a user message
// with text (a tool's result is a user message too, without).
func (claudeFormat) taken(line []byte) bool {
	if !bytes.Contains(line, []byte(`"user"`)) {
		return false
	}
	var l claudeLine
	if json.Unmarshal(line, &l) != nil || l.Type != "user" {
		return false
	}
	var blocks []claudeBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return false
	}
	for _, b := range blocks {
		if b.Type == "text" {
			return true
		}
	}
	return false
}

type claudeTurn struct {
	Type    string            `json:"type"`
	Message claudeTurnMessage `json:"message"`
}

type claudeTurnMessage struct {
	Role    string       `json:"role"`
	Content []claudeText `json:"content"`
}

type claudeText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (claudeFormat) newDecoder() decoder { return &claudeDecoder{tools: map[string]string{}} }

type claudeDecoder struct {
	session string
	tools   map[string]string // tool name by tool_use id
}

type claudeLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Message   struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	// system/api_retry
	Attempt     int    `json:"attempt"`
	MaxRetries  int    `json:"max_retries"`
	ErrorStatus int    `json:"error_status"`
	Error       any    `json:"error"`
	Result      string `json:"result"`
	IsError     bool   `json:"is_error"`
	Errors      []any  `json:"errors"`
	Usage       *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	APIErrorStatus any `json:"api_error_status"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (d *claudeDecoder) decode(line []byte) []Event {
	var l claudeLine
	if json.Unmarshal(line, &l) != nil {
		return nil
	}
	var cost struct {
		TotalCostUSD *float64 `json:"total_cost_usd"`
		// On a resumed session total_cost_usd counts the earlier runs too;
		// this is the run's own, by model.
		SinceLast map[string]struct {
			CostUSD float64 `json:"costUSD"`
		} `json:"model_usage_since_last_result"`
	}
	r := raw(line)
	var out []Event
	if l.SessionID != "" && l.SessionID != d.session {
		d.session = l.SessionID
		out = append(out, Event{Kind: EventSession, SessionID: l.SessionID, Raw: r})
	}
	switch l.Type {
	case "system":
		if l.Subtype == "api_retry" {
			out = append(out, Event{Kind: EventError, Raw: r, Text: fmt.Sprintf(
				"api_retry: %v (HTTP %d), attempt %d of %d", l.Error, l.ErrorStatus, l.Attempt, l.MaxRetries)})
		}
	case "assistant", "user":
		var blocks []claudeBlock
		if json.Unmarshal(l.Message.Content, &blocks) != nil {
			var s string
			if json.Unmarshal(l.Message.Content, &s) == nil && l.Type == "assistant" && s != "" {
				out = append(out, Event{Kind: EventText, Text: s, Raw: r})
			}
			return out
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if l.Type == "assistant" && b.Text != "" {
					out = append(out, Event{Kind: EventText, Text: b.Text, Raw: r})
				}
			case "tool_use":
				d.tools[b.ID] = b.Name
				out = append(out, Event{Kind: EventToolCall, Tool: b.Name, ToolID: b.ID, Input: b.Input, File: fileOf(b.Input), Raw: r})
			case "tool_result":
				tool, text := d.tools[b.ToolUseID], textOf(b.Content)
				out = append(out, Event{Kind: EventToolResult, Tool: tool, ToolID: b.ToolUseID,
					Text: text, IsError: b.IsError, ExitCode: claudeExit(tool, text, b.IsError), Raw: r})
			}
		}
	case "result":
		_ = json.Unmarshal(line, &cost)
		ev := Event{Kind: EventResult, SessionID: l.SessionID, Text: l.Result, IsError: l.IsError || l.Subtype != "success", Raw: r}
		if ev.IsError && ev.Text == "" {
			parts := []string{l.Subtype}
			for _, e := range l.Errors {
				parts = append(parts, fmt.Sprint(e))
			}
			ev.Text = strings.Join(parts, ": ")
		}
		if ev.IsError && l.APIErrorStatus != nil {
			ev.Text += fmt.Sprintf(" (HTTP %v)", l.APIErrorStatus)
		}
		if l.Usage != nil {
			ev.Usage = Usage{
				InputTokens:  l.Usage.InputTokens + l.Usage.CacheReadInputTokens + l.Usage.CacheCreationInputTokens,
				OutputTokens: l.Usage.OutputTokens,
				CachedTokens: l.Usage.CacheReadInputTokens,
			}
		}
		switch {
		case cost.SinceLast != nil:
			for _, m := range cost.SinceLast {
				ev.Usage.CostUSD += m.CostUSD
			}
			ev.Usage.CostReported = true
		case cost.TotalCostUSD != nil:
			ev.Usage.CostUSD, ev.Usage.CostReported = *cost.TotalCostUSD, true
		}
		out = append(out, ev)
	}
	return out
}

// claudeExit reads a Bash tool result's exit status: Claude Code marks a
// command that exited non-zero as an error whose content starts with
// "Exit code N"; a Bash result that is no error exited 0. Other tools,
// and errors without the line (a timeout, a refusal), have none.
func claudeExit(tool, text string, isError bool) *int {
	if tool != "Bash" {
		return nil
	}
	if !isError {
		code := 0
		return &code
	}
	line, _, _ := strings.Cut(strings.TrimPrefix(text, "Error: "), "\n")
	if n, ok := strings.CutPrefix(line, "Exit code "); ok {
		if code, err := strconv.Atoi(strings.TrimSpace(n)); err == nil {
			return &code
		}
	}
	return nil
}
