package fakemodel

import (
	"encoding/json"
	"net/http"
)

// gemini is the Generative Language API: streamGenerateContent?alt=sse sends
// GenerateContentResponse objects as data-only server-sent events, the last
// carrying finishReason and usageMetadata; generateContent sends one.
type gemini struct{}

func (gemini) agent(body []byte) bool {
	var v struct {
		Tools []struct {
			FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &v)
	for _, t := range v.Tools {
		if len(t.FunctionDeclarations) > 0 {
			return true
		}
	}
	return false
}

func (gemini) stream(r *http.Request, _ []byte) bool {
	return r.URL.Query().Get("alt") == "sse"
}

func (gemini) chunk(c call, parts []obj, final bool, t Turn) obj {
	cand := obj{"content": obj{"role": "model", "parts": parts}, "index": 0}
	out := obj{"candidates": []obj{cand}, "modelVersion": c.model, "responseId": "fake" + c.id}
	if final {
		cand["finishReason"] = "STOP"
		in, o := usage(t)
		out["usageMetadata"] = obj{"promptTokenCount": in, "candidatesTokenCount": o, "totalTokenCount": in + o}
	}
	return out
}

func (g gemini) parts(t Turn) []obj {
	var parts []obj
	if t.Text != "" || t.Tool == nil {
		parts = append(parts, obj{"text": t.Text})
	}
	if t.Tool != nil {
		var args any = obj{}
		_ = json.Unmarshal([]byte(toolArgs(t.Tool)), &args)
		parts = append(parts, obj{"functionCall": obj{"name": t.Tool.Name, "args": args}})
	}
	return parts
}

func (g gemini) writeStream(w *sseWriter, t Turn, c call) {
	parts := g.parts(t)
	for i, p := range parts {
		w.event("", g.chunk(c, []obj{p}, i == len(parts)-1, t))
	}
}

func (g gemini) writeJSON(w http.ResponseWriter, t Turn, c call) {
	_ = json.NewEncoder(w).Encode(g.chunk(c, g.parts(t), true, t))
}
