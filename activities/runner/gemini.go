package runner

import (
	"encoding/json"
	"strings"
)

// geminiFormat is Gemini CLI's headless mode:
//
//	gemini --output-format stream-json --approval-mode yolo
//	  [--model M] [--resume ID] --prompt=PROMPT
//
// Its stream is one JSON object a line: init (session id, model), message
// (the user's, then the assistant's in deltas), tool_use, tool_result, error
// (warnings too) and a last result with status and token stats. It has no
// option to add to its system prompt (GEMINI_SYSTEM_MD replaces it whole), so
// Spec.SystemPrompt goes before the prompt in a <system-instructions> block.
//
// Its environment needs GEMINI_CLI_TRUST_WORKSPACE=true: in a folder it does
// not trust it quietly drops --approval-mode yolo and refuses every tool call
// that needs approval.
type geminiFormat struct{}

func (geminiFormat) args(s Spec) []string {
	a := []string{"--output-format", "stream-json", "--approval-mode", "yolo"}
	if s.Model != "" {
		a = append(a, "--model", s.Model)
	}
	if s.SessionID != "" {
		a = append(a, "--resume", s.SessionID)
	}
	return append(a, "--prompt="+withSystem(s.SystemPrompt, s.Prompt))
}

// withSystem puts instructions before the prompt, for CLIs with no option
// to carry them.
func withSystem(system, prompt string) string {
	if system == "" {
		return prompt
	}
	return "<system-instructions>\n" + system + "\n</system-instructions>\n\n" + prompt
}

func (geminiFormat) newDecoder() decoder { return &geminiDecoder{tools: map[string]string{}} }

type geminiDecoder struct {
	text  strings.Builder // the assistant message being streamed
	tools map[string]string
}

type geminiLine struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	Delta      bool            `json:"delta"`
	ToolName   string          `json:"tool_name"`
	ToolID     string          `json:"tool_id"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Output     string          `json:"output"`
	Severity   string          `json:"severity"`
	Message    string          `json:"message"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		Cached       int64 `json:"cached"`
	} `json:"stats"`
}

func (d *geminiDecoder) decode(line []byte) []Event {
	var l geminiLine
	if json.Unmarshal(line, &l) != nil {
		return nil
	}
	r := raw(line)
	switch l.Type {
	case "init":
		return []Event{{Kind: EventSession, SessionID: l.SessionID, Raw: r}}
	case "message":
		if l.Role != "assistant" {
			d.text.Reset()
			return nil
		}
		if !l.Delta {
			d.text.Reset()
		}
		d.text.WriteString(l.Content)
		return []Event{{Kind: EventText, Text: l.Content, Raw: r}}
	case "tool_use":
		d.text.Reset()
		d.tools[l.ToolID] = l.ToolName
		return []Event{{Kind: EventToolCall, Tool: l.ToolName, ToolID: l.ToolID, Input: l.Parameters, File: fileOf(l.Parameters), Raw: r}}
	case "tool_result":
		ev := Event{Kind: EventToolResult, Tool: d.tools[l.ToolID], ToolID: l.ToolID, Text: l.Output, IsError: l.Status == "error", Raw: r}
		if l.Error != nil && ev.Text == "" {
			ev.Text = l.Error.Message
		}
		return []Event{ev}
	case "error":
		return []Event{{Kind: EventError, Text: l.Severity + ": " + l.Message, Raw: r}}
	case "result":
		ev := Event{Kind: EventResult, Text: d.text.String(), IsError: l.Status != "success", Raw: r}
		d.text.Reset()
		if l.Error != nil {
			ev.Text = l.Error.Message
		}
		if l.Stats != nil {
			ev.Usage = Usage{InputTokens: l.Stats.InputTokens, OutputTokens: l.Stats.OutputTokens, CachedTokens: l.Stats.Cached}
		}
		return []Event{ev}
	}
	return nil
}
