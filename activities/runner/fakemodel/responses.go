package fakemodel

import (
	"encoding/json"
	"net/http"
	"time"
)

// responses is the OpenAI Responses API: response.created and
// response.in_progress, then per output item output_item.added, its deltas
// and output_item.done, then response.completed carrying usage.
type responses struct{}

// agent: tools in "tools", or, as Codex sends them for some models, in an
// "additional_tools" input item.
func (responses) agent(body []byte) bool {
	if hasTools(body) {
		return true
	}
	var v struct {
		Input []struct {
			Type string `json:"type"`
		} `json:"input"`
	}
	_ = json.Unmarshal(body, &v)
	for _, it := range v.Input {
		if it.Type == "additional_tools" {
			return true
		}
	}
	return false
}

func (responses) stream(_ *http.Request, body []byte) bool {
	var v struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &v)
	return v.Stream
}

func (responses) items(t Turn, c call) []obj {
	var out []obj
	if t.Text != "" || t.Tool == nil {
		out = append(out, obj{"id": "msg_fake" + c.id, "type": "message", "status": "completed", "role": "assistant",
			"content": []obj{{"type": "output_text", "text": t.Text, "annotations": []any{}}}})
	}
	if t.Tool != nil {
		out = append(out, obj{"id": "fc_fake" + c.id, "type": "function_call", "status": "completed",
			"call_id": "call_fake" + c.id, "name": t.Tool.Name, "arguments": toolArgs(t.Tool)})
	}
	return out
}

func (r responses) response(t Turn, c call, status string, output []obj) obj {
	resp := obj{"id": "resp_fake" + c.id, "object": "response", "created_at": time.Now().Unix(),
		"status": status, "model": c.model, "output": output}
	if status == "completed" {
		in, out := usage(t)
		resp["usage"] = obj{"input_tokens": in, "input_tokens_details": obj{"cached_tokens": 0},
			"output_tokens": out, "output_tokens_details": obj{"reasoning_tokens": 0}, "total_tokens": in + out}
	}
	return resp
}

func (r responses) writeStream(w *sseWriter, t Turn, c call) {
	seq := 0
	ev := func(name string, data obj) {
		data["type"] = name
		data["sequence_number"] = seq
		seq++
		w.event(name, data)
	}
	ev("response.created", obj{"response": r.response(t, c, "in_progress", []obj{})})
	ev("response.in_progress", obj{"response": r.response(t, c, "in_progress", []obj{})})
	items := r.items(t, c)
	for i, it := range items {
		id := it["id"]
		switch it["type"] {
		case "message":
			ev("response.output_item.added", obj{"output_index": i, "item": obj{"id": id, "type": "message",
				"status": "in_progress", "role": "assistant", "content": []any{}}})
			ev("response.content_part.added", obj{"item_id": id, "output_index": i, "content_index": 0,
				"part": obj{"type": "output_text", "text": "", "annotations": []any{}}})
			if t.Text != "" {
				ev("response.output_text.delta", obj{"item_id": id, "output_index": i, "content_index": 0, "delta": t.Text})
			}
			ev("response.output_text.done", obj{"item_id": id, "output_index": i, "content_index": 0, "text": t.Text})
			ev("response.content_part.done", obj{"item_id": id, "output_index": i, "content_index": 0,
				"part": obj{"type": "output_text", "text": t.Text, "annotations": []any{}}})
		case "function_call":
			ev("response.output_item.added", obj{"output_index": i, "item": obj{"id": id, "type": "function_call",
				"status": "in_progress", "call_id": it["call_id"], "name": it["name"], "arguments": ""}})
			ev("response.function_call_arguments.delta", obj{"item_id": id, "output_index": i, "delta": it["arguments"]})
			ev("response.function_call_arguments.done", obj{"item_id": id, "output_index": i, "arguments": it["arguments"]})
		}
		ev("response.output_item.done", obj{"output_index": i, "item": it})
	}
	ev("response.completed", obj{"response": r.response(t, c, "completed", items)})
}

func (r responses) writeJSON(w http.ResponseWriter, t Turn, c call) {
	_ = json.NewEncoder(w).Encode(r.response(t, c, "completed", r.items(t, c)))
}
