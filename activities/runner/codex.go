package runner

import (
	"encoding/json"
)

// codexFormat is Codex's exec mode:
//
//	codex exec --json --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check
//	  [-c check_for_update_on_startup=false] [-m M] [-c developer_instructions="S"]
//	  [--enable hooks --dangerously-bypass-hook-trust -c hooks=H] [resume ID] PROMPT
//
// Its stream is one JSON object a line: thread.started (the thread id, which
// is the session id), turn.started, item.started and item.completed for
// agent messages, command executions, file changes, MCP tool calls and
// errors, and turn.completed with usage or turn.failed. Its usage is the
// thread's running total, so a resumed run counts the earlier turns too.
// Standard input is read and appended to the prompt, so Run gives it none.
type codexFormat struct{}

func (codexFormat) args(s Spec) []string {
	// No check for a newer Codex: a run reaches only the hosts it needs.
	a := []string{"exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "-c", "check_for_update_on_startup=false"}
	if s.Model != "" {
		a = append(a, "-m", s.Model)
	}
	if s.SystemPrompt != "" {
		// A TOML basic string: JSON's escapes are valid in it.
		q, _ := json.Marshal(s.SystemPrompt)
		a = append(a, "-c", "developer_instructions="+string(q))
	}
	if s.CodexHooks != "" {
		// --enable hooks wins over a [features] hooks = false the agent
		// could write into CODEX_HOME's config.toml.
		a = append(a, "--enable", "hooks", "--dangerously-bypass-hook-trust", "-c", "hooks="+s.CodexHooks)
	}
	if s.SessionID != "" {
		a = append(a, "resume", s.SessionID)
	}
	return append(a, "--", s.Prompt)
}

func (codexFormat) newDecoder() decoder { return &codexDecoder{} }

type codexDecoder struct {
	last string // the last agent message, the result's text
}

type codexItem struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Text             string `json:"text"`
	Message          string `json:"message"`
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	Status           string `json:"status"`
	Changes          []struct{ Path, Kind string }
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Query            string          `json:"query"`
	Error            *struct {
		Message string `json:"message"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
}

type codexLine struct {
	Type     string    `json:"type"`
	ThreadID string    `json:"thread_id"`
	Item     codexItem `json:"item"`
	Message  string    `json:"message"`
	Usage    *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (d *codexDecoder) decode(line []byte) []Event {
	var l codexLine
	if json.Unmarshal(line, &l) != nil {
		return nil
	}
	r := raw(line)
	switch l.Type {
	case "thread.started":
		return []Event{{Kind: EventSession, SessionID: l.ThreadID, Raw: r}}
	case "item.started", "item.completed":
		return d.item(l.Type == "item.completed", l.Item, r)
	case "turn.completed":
		ev := Event{Kind: EventResult, Text: d.last, Raw: r}
		if l.Usage != nil {
			ev.Usage = Usage{InputTokens: l.Usage.InputTokens, OutputTokens: l.Usage.OutputTokens,
				CachedTokens: l.Usage.CachedInputTokens, SessionTotal: true}
		}
		return []Event{ev}
	case "turn.failed":
		msg := "turn failed"
		if l.Error != nil {
			msg = l.Error.Message
		}
		return []Event{{Kind: EventResult, IsError: true, Text: msg, Raw: r}}
	case "error":
		return []Event{{Kind: EventError, Text: l.Message, Raw: r}}
	}
	return nil
}

func (d *codexDecoder) item(done bool, it codexItem, r json.RawMessage) []Event {
	switch it.Type {
	case "agent_message":
		if done {
			d.last = it.Text
			return []Event{{Kind: EventText, Text: it.Text, Raw: r}}
		}
	case "command_execution":
		if !done {
			in, _ := json.Marshal(map[string]string{"command": it.Command})
			return []Event{{Kind: EventToolCall, Tool: it.Type, ToolID: it.ID, Input: in, Raw: r}}
		}
		return []Event{{Kind: EventToolResult, Tool: it.Type, ToolID: it.ID, Text: it.AggregatedOutput, ExitCode: it.ExitCode,
			IsError: it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0), Raw: r}}
	case "file_change":
		// Codex reports a patch once, when it has been applied.
		var evs []Event
		for _, c := range it.Changes {
			in, _ := json.Marshal(map[string]string{"path": c.Path, "kind": c.Kind})
			evs = append(evs, Event{Kind: EventToolCall, Tool: it.Type, ToolID: it.ID, Input: in, File: c.Path, Raw: r})
		}
		if done {
			evs = append(evs, Event{Kind: EventToolResult, Tool: it.Type, ToolID: it.ID, Text: it.Status,
				IsError: it.Status == "failed", Raw: r})
		}
		return evs
	case "mcp_tool_call":
		name := it.Server + "." + it.Tool
		if !done {
			return []Event{{Kind: EventToolCall, Tool: name, ToolID: it.ID, Input: it.Arguments, File: fileOf(it.Arguments), Raw: r}}
		}
		ev := Event{Kind: EventToolResult, Tool: name, ToolID: it.ID, Text: string(it.Result), IsError: it.Status == "failed", Raw: r}
		if it.Error != nil {
			ev.Text, ev.IsError = it.Error.Message, true
		}
		return []Event{ev}
	case "web_search":
		if !done {
			in, _ := json.Marshal(map[string]string{"query": it.Query})
			return []Event{{Kind: EventToolCall, Tool: it.Type, ToolID: it.ID, Input: in, Raw: r}}
		}
	case "error":
		return []Event{{Kind: EventError, Text: it.Message, Raw: r}}
	}
	return nil
}
