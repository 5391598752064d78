package fakemodel

import (
	"encoding/json"
	"net/http"
	"time"
)

// chat is the OpenAI Chat Completions API: chat.completion.chunk objects as
// data-only server-sent events, a last chunk with usage when the request asks
// for it (stream_options.include_usage), then data: [DONE].
type chat struct{}

func (chat) agent(body []byte) bool { return hasTools(body) }

func (chat) stream(_ *http.Request, body []byte) bool {
	var v struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &v)
	return v.Stream
}

func (chat) usage(t Turn) obj {
	in, out := usage(t)
	return obj{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

func (chat) finish(t Turn) string {
	if t.Tool != nil {
		return "tool_calls"
	}
	return "stop"
}

func (ch chat) writeStream(w *sseWriter, t Turn, c call) {
	created := time.Now().Unix()
	chunk := func(delta obj, finish any) obj {
		return obj{"id": "chatcmpl-fake" + c.id, "object": "chat.completion.chunk", "created": created, "model": c.model,
			"choices": []obj{{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	w.event("", chunk(obj{"role": "assistant", "content": ""}, nil))
	if t.Text != "" {
		w.event("", chunk(obj{"content": t.Text}, nil))
	}
	if t.Tool != nil {
		w.event("", chunk(obj{"tool_calls": []obj{{"index": 0, "id": "call_fake" + c.id, "type": "function",
			"function": obj{"name": t.Tool.Name, "arguments": toolArgs(t.Tool)}}}}, nil))
	}
	w.event("", chunk(obj{}, ch.finish(t)))
	w.event("", obj{"id": "chatcmpl-fake" + c.id, "object": "chat.completion.chunk", "created": created, "model": c.model,
		"choices": []obj{}, "usage": ch.usage(t)})
	w.event("", "[DONE]")
}

func (ch chat) writeJSON(w http.ResponseWriter, t Turn, c call) {
	msg := obj{"role": "assistant", "content": t.Text}
	if t.Tool != nil {
		msg["tool_calls"] = []obj{{"id": "call_fake" + c.id, "type": "function",
			"function": obj{"name": t.Tool.Name, "arguments": toolArgs(t.Tool)}}}
	}
	_ = json.NewEncoder(w).Encode(obj{"id": "chatcmpl-fake" + c.id, "object": "chat.completion",
		"created": time.Now().Unix(), "model": c.model,
		"choices": []obj{{"index": 0, "message": msg, "finish_reason": ch.finish(t)}}, "usage": ch.usage(t)})
}
