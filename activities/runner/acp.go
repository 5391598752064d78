package runner

import (
	"encoding/json"
	"fmt"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// acpFormat is an agent that speaks the Agent Client Protocol (schema
// version 1) on its standard input and output: JSON-RPC 2.0, one message a
// line. Spec.Command is the agent's whole command line, such as
//
//	gemini --acp
//	opencode acp
//	claude-agent-acp
//
// and ampflow is the client: initialize, session/new in Spec.Dir with
// Spec.MCPServers (or session/load of Spec.SessionID), session/prompt with
// the prompt, session/update notifications decoded into Events,
// session/request_permission answered by Spec.Permission, and
// session/cancel when a watchdog fires or the run parks (runACP).
//
// The agent's stream is decoded by acpDecoder: agent_message_chunk is
// text, tool_call and tool_call_update are tool calls and their results,
// plan is a plan, usage_update's cumulative cost becomes the run's cost
// (the difference from the last figure it saw, so a resumed session that
// replays its figure counts only this run's), and a prompt's response
// ends the run with its stop reason and token usage.
type acpFormat struct{}

// args are none: Spec.Command holds the agent's command line.
func (acpFormat) args(Spec) []string { return nil }

func (acpFormat) newDecoder() decoder { return newACPDecoder() }

// acpDecoder turns ACP messages into Events. It is used live by runACP,
// which hands it the SDK's typed messages, and by Decode on a recorded
// stream of the agent's output.
type acpDecoder struct {
	text     strings.Builder // the agent's text of the current turn
	tools    map[string]string
	done     map[string]bool // tool calls whose result was reported
	lastCost *float64        // the last cumulative cost the agent reported
}

func newACPDecoder() *acpDecoder {
	return &acpDecoder{tools: map[string]string{}, done: map[string]bool{}}
}

// acpEnvelope is one JSON-RPC message of a recorded stream.
type acpEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decode reads one line of the agent's output: a session/update, the
// response of session/new (its session id) or of session/prompt (the
// turn's end), or an error response.
func (d *acpDecoder) decode(line []byte) []Event {
	var m acpEnvelope
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	r := raw(line)
	switch {
	case m.Method == acp.ClientMethodSessionUpdate:
		var n acp.SessionNotification
		if json.Unmarshal(m.Params, &n) != nil {
			return nil
		}
		return withRaw(d.update(n.Update, false), r)
	case m.Method == acp.ClientMethodSessionRequestPermission:
		var p acp.RequestPermissionRequest
		if json.Unmarshal(m.Params, &p) != nil {
			return nil
		}
		return withRaw(d.permission(permissionRequest(p)), r)
	case m.Error != nil:
		return []Event{{Kind: EventError, Text: fmt.Sprintf("ACP error %d: %s", m.Error.Code, m.Error.Message), Raw: r}}
	case len(m.Result) > 0:
		var res struct {
			SessionID  string          `json:"sessionId"`
			StopReason acp.StopReason  `json:"stopReason"`
			Usage      json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(m.Result, &res) != nil {
			return nil
		}
		switch {
		case res.SessionID != "":
			return []Event{{Kind: EventSession, SessionID: res.SessionID, Raw: r}}
		case res.StopReason != "":
			var p acp.PromptResponse
			_ = json.Unmarshal(m.Result, &p)
			return withRaw(d.turnEnd(p, true), r)
		}
	}
	return nil
}

func withRaw(evs []Event, r json.RawMessage) []Event {
	for i := range evs {
		evs[i].Raw = r
	}
	return evs
}

// update decodes one session/update. A replayed one (session/load's
// history) only moves the cost's baseline.
func (d *acpDecoder) update(u acp.SessionUpdate, replay bool) []Event {
	if replay {
		if u.UsageUpdate != nil {
			d.update(u, false)
		}
		return nil
	}
	switch {
	case u.AgentMessageChunk != nil:
		if t := blockText(u.AgentMessageChunk.Content); t != "" {
			d.text.WriteString(t)
			return []Event{{Kind: EventText, Text: t}}
		}
	case u.ToolCall != nil:
		c := u.ToolCall
		id := string(c.ToolCallId)
		tool := acpTool(c.Kind)
		d.tools[id] = tool
		d.text.Reset() // the result's text is the last message's
		in := acpInput(c.RawInput, c.Title)
		evs := []Event{{Kind: EventToolCall, Tool: tool, ToolID: id, Input: in, File: acpFile(c.Locations, in), Text: c.Title}}
		return append(evs, d.toolResult(id, &c.Status, c.Content, c.RawOutput)...)
	case u.ToolCallUpdate != nil:
		c := u.ToolCallUpdate
		id := string(c.ToolCallId)
		if _, ok := d.tools[id]; !ok && c.Kind != nil {
			d.tools[id] = acpTool(*c.Kind)
		}
		return d.toolResult(id, c.Status, c.Content, c.RawOutput)
	case u.Plan != nil:
		var b strings.Builder
		for _, e := range u.Plan.Entries {
			fmt.Fprintf(&b, "[%s] %s\n", e.Status, e.Content)
		}
		return []Event{{Kind: EventPlan, Text: strings.TrimSuffix(b.String(), "\n")}}
	case u.UsageUpdate != nil:
		c := u.UsageUpdate.Cost
		if c == nil || (c.Currency != "" && !strings.EqualFold(c.Currency, "USD")) {
			return nil
		}
		delta := c.Amount
		if d.lastCost != nil {
			delta -= *d.lastCost
		}
		amount := c.Amount
		d.lastCost = &amount
		if delta <= 0 {
			return nil
		}
		return []Event{{Kind: EventUsage, Usage: Usage{CostUSD: delta, CostReported: true}}}
	}
	return nil
}

// permission is a permission request: a tool call of its own when the
// agent announced none (Gemini CLI asks before it announces).
func (d *acpDecoder) permission(p PermissionRequest) []Event {
	if _, ok := d.tools[p.ToolCallID]; ok {
		return nil
	}
	d.tools[p.ToolCallID] = p.Tool
	d.text.Reset()
	return []Event{{Kind: EventToolCall, Tool: p.Tool, ToolID: p.ToolCallID, Input: p.Input, File: fileOf(p.Input), Text: p.Title}}
}

// toolResult reports a tool call's result once its status is final.
func (d *acpDecoder) toolResult(id string, status *acp.ToolCallStatus, content []acp.ToolCallContent, rawOutput any) []Event {
	if status == nil || (*status != acp.ToolCallStatusCompleted && *status != acp.ToolCallStatusFailed) || d.done[id] {
		return nil
	}
	d.done[id] = true
	var b strings.Builder
	for _, c := range content {
		switch {
		case c.Content != nil:
			b.WriteString(blockText(c.Content.Content))
		case c.Diff != nil:
			fmt.Fprintf(&b, "diff %s\n", c.Diff.Path)
		}
	}
	text := b.String()
	if text == "" && rawOutput != nil {
		text = textOf(jsonOf(rawOutput))
	}
	return []Event{{Kind: EventToolResult, Tool: d.tools[id], ToolID: id, Text: text, IsError: *status == acp.ToolCallStatusFailed}}
}

// turnEnd is a prompt's response: its token usage and, when last, the
// run's result with the turn's text. A turn that did not end by itself
// (cancelled, a refusal, out of tokens or turns) is an error.
func (d *acpDecoder) turnEnd(p acp.PromptResponse, last bool) []Event {
	var evs []Event
	if p.Usage == nil {
		p.Usage = metaUsage(p.Meta)
	}
	if u := p.Usage; u != nil {
		in := int64(u.InputTokens)
		cached := int64(0)
		if u.CachedReadTokens != nil {
			cached = int64(*u.CachedReadTokens)
		}
		out := int64(u.OutputTokens)
		if u.ThoughtTokens != nil {
			out += int64(*u.ThoughtTokens)
		}
		evs = append(evs, Event{Kind: EventUsage, Usage: Usage{InputTokens: in, OutputTokens: out, CachedTokens: cached}})
	}
	if last {
		ev := Event{Kind: EventResult, Text: d.text.String(), IsError: p.StopReason != acp.StopReasonEndTurn}
		if ev.IsError && ev.Text == "" {
			ev.Text = "the turn ended: " + string(p.StopReason)
		}
		evs = append(evs, ev)
	}
	d.text.Reset()
	return evs
}

// metaUsage reads a turn's tokens from its _meta where an agent puts them
// there instead of in usage (Gemini CLI: quota.token_count).
func metaUsage(meta map[string]any) *acp.Usage {
	var m struct {
		Quota struct {
			TokenCount *struct {
				In  int `json:"input_tokens"`
				Out int `json:"output_tokens"`
			} `json:"token_count"`
		} `json:"quota"`
	}
	if meta == nil || json.Unmarshal(jsonOf(meta), &m) != nil || m.Quota.TokenCount == nil {
		return nil
	}
	t := m.Quota.TokenCount
	return &acp.Usage{InputTokens: t.In, OutputTokens: t.Out, TotalTokens: t.In + t.Out}
}

// acpTool is the name ampflow knows an ACP tool call by: its kind
// (execute, edit, read, …), as the tool policy's rules see it.
func acpTool(k acp.ToolKind) string {
	if k == "" {
		return string(acp.ToolKindOther)
	}
	return string(k)
}

// acpInput is a tool call's input as JSON: its raw input, or else its
// title, which is all some agents send.
func acpInput(rawInput any, title string) json.RawMessage {
	if rawInput != nil {
		if b := jsonOf(rawInput); len(b) > 0 && string(b) != "null" && string(b) != "{}" {
			return b
		}
	}
	b, _ := json.Marshal(map[string]string{"title": title})
	return b
}

// acpFile is the file a tool call names: its first location, else a path
// in its input.
func acpFile(locs []acp.ToolCallLocation, in json.RawMessage) string {
	if len(locs) > 0 && locs[0].Path != "" {
		return locs[0].Path
	}
	return fileOf(in)
}

func jsonOf(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func blockText(c acp.ContentBlock) string {
	if c.Text != nil {
		return c.Text.Text
	}
	return ""
}
