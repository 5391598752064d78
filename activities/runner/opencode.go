package runner

import (
	"encoding/json"
)

// opencodeFormat is OpenCode's run command:
//
//	opencode run --format json --auto [--model PROVIDER/MODEL] [--session ID] -- PROMPT
//
// Its stream is one JSON object a line, each with the sessionID: step_start,
// text, tool_use (once, when the tool has finished, with its input and
// output), step_finish with the step's tokens and cost and the reason it
// stopped, and error. There is no final result object: a step_finish whose
// reason is not "tool-calls" ends the run. It has no option for a system
// prompt, so Spec.SystemPrompt goes before the prompt in a
// <system-instructions> block.
type opencodeFormat struct{}

func (opencodeFormat) args(s Spec) []string {
	a := []string{"run", "--format", "json", "--auto"}
	if s.Model != "" {
		a = append(a, "--model", s.Model)
	}
	if s.SessionID != "" {
		a = append(a, "--session", s.SessionID)
	}
	return append(a, "--", withSystem(s.SystemPrompt, s.Prompt))
}

func (opencodeFormat) newDecoder() decoder { return &opencodeDecoder{} }

type opencodeDecoder struct {
	session string
	last    string // the last text, the result's
}

type opencodeLine struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Tool   string `json:"tool"`
		CallID string `json:"callID"`
		State  struct {
			Status string          `json:"status"`
			Input  json.RawMessage `json:"input"`
			Output string          `json:"output"`
			Error  string          `json:"error"`
			// Metadata of the bash tool: exit is the command's status.
			Metadata struct {
				Exit *int `json:"exit"`
			} `json:"metadata"`
		} `json:"state"`
		Reason string   `json:"reason"`
		Cost   *float64 `json:"cost"`
		Tokens *struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
	} `json:"part"`
	Error json.RawMessage `json:"error"`
}

func (d *opencodeDecoder) decode(line []byte) []Event {
	var l opencodeLine
	if json.Unmarshal(line, &l) != nil {
		return nil
	}
	r := raw(line)
	var out []Event
	if l.SessionID != "" && l.SessionID != d.session {
		d.session = l.SessionID
		out = append(out, Event{Kind: EventSession, SessionID: l.SessionID, Raw: r})
	}
	p := l.Part
	switch l.Type {
	case "text":
		if p.Text != "" {
			d.last = p.Text
			out = append(out, Event{Kind: EventText, Text: p.Text, Raw: r})
		}
	case "tool_use":
		out = append(out, Event{Kind: EventToolCall, Tool: p.Tool, ToolID: p.CallID, Input: p.State.Input, File: fileOf(p.State.Input), Raw: r})
		if p.State.Status == "completed" || p.State.Status == "error" {
			code := p.State.Metadata.Exit
			ev := Event{Kind: EventToolResult, Tool: p.Tool, ToolID: p.CallID, Text: p.State.Output, ExitCode: code,
				IsError: p.State.Status == "error" || (code != nil && *code != 0), Raw: r}
			if ev.IsError && p.State.Error != "" {
				ev.Text = p.State.Error
			}
			out = append(out, ev)
		}
	case "step_finish":
		var u Usage
		if p.Tokens != nil {
			// OpenCode counts cache reads and writes apart from input.
			u = Usage{InputTokens: p.Tokens.Input + p.Tokens.Cache.Read + p.Tokens.Cache.Write,
				OutputTokens: p.Tokens.Output + p.Tokens.Reasoning, CachedTokens: p.Tokens.Cache.Read}
		}
		if p.Cost != nil && *p.Cost > 0 {
			u.CostUSD, u.CostReported = *p.Cost, true
		}
		out = append(out, Event{Kind: EventUsage, Usage: u, Raw: r})
		if p.Reason != "tool-calls" {
			out = append(out, Event{Kind: EventResult, Text: d.last, IsError: p.Reason == "error", Raw: r})
		}
	case "error":
		out = append(out, Event{Kind: EventError, Text: errorText(l.Error), Raw: r})
	}
	return out
}

// errorText reads an error object's message, as {"message"} or
// {"data":{"message"}}, or returns its JSON.
func errorText(e json.RawMessage) string {
	var v struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Data    struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if json.Unmarshal(e, &v) == nil {
		switch {
		case v.Data.Message != "":
			return v.Name + ": " + v.Data.Message
		case v.Message != "":
			return v.Message
		}
	}
	return textOf(e)
}
