package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropic is the Messages API: a stream of message_start,
// content_block_start/delta/stop per block, message_delta with the stop
// reason and output usage, and message_stop.
type anthropic struct{}

func (anthropic) agent(body []byte) bool { return hasTools(body) }

func (anthropic) stream(_ *http.Request, body []byte) bool {
	var v struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &v)
	return v.Stream
}

type obj = map[string]any

func (anthropic) blocks(t Turn, c call) []obj {
	var out []obj
	if t.Text != "" || t.Tool == nil {
		out = append(out, obj{"type": "text", "text": t.Text})
	}
	if t.Tool == nil {
		return out
	}
	for i, tc := range append([]*ToolCall{t.Tool}, t.More...) {
		var input any = obj{}
		_ = json.Unmarshal([]byte(toolArgs(tc)), &input)
		id := "toolu_fake" + c.id
		if i > 0 {
			id += fmt.Sprintf("_%d", i+1)
		}
		out = append(out, obj{"type": "tool_use", "id": id, "name": tc.Name, "input": input, "args": toolArgs(tc)})
	}
	return out
}

// withoutArgs drops the blocks' streamed arguments (not a Messages API
// field) from a whole reply.
func withoutArgs(bs []obj) []obj {
	for _, b := range bs {
		delete(b, "args")
	}
	return bs
}

func stopReason(t Turn) string {
	if t.Tool != nil {
		return "tool_use"
	}
	return "end_turn"
}

func (a anthropic) writeStream(w *sseWriter, t Turn, c call) {
	in, out := usage(t)
	w.event("message_start", obj{"type": "message_start", "message": obj{
		"id": "msg_fake" + c.id, "type": "message", "role": "assistant", "model": c.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": in, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	w.event("ping", obj{"type": "ping"})
	for i, b := range a.blocks(t, c) {
		switch b["type"] {
		case "text":
			w.event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
			if t.Text != "" {
				w.event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": t.Text}})
			}
		case "tool_use":
			w.event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{
				"type": "tool_use", "id": b["id"], "name": b["name"], "input": obj{}}})
			w.event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{
				"type": "input_json_delta", "partial_json": b["args"]}})
		}
		w.event("content_block_stop", obj{"type": "content_block_stop", "index": i})
	}
	w.event("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": stopReason(t), "stop_sequence": nil},
		"usage": obj{"output_tokens": out}})
	w.event("message_stop", obj{"type": "message_stop"})
}

func (a anthropic) writeJSON(w http.ResponseWriter, t Turn, c call) {
	in, out := usage(t)
	_ = json.NewEncoder(w).Encode(obj{
		"id": "msg_fake" + c.id, "type": "message", "role": "assistant", "model": c.model,
		"content": withoutArgs(a.blocks(t, c)), "stop_reason": stopReason(t), "stop_sequence": nil,
		"usage": obj{"input_tokens": in, "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	})
}
