package runner

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
)

// maxMeteredBody bounds what the meter keeps of a response that is not a
// stream of events, to read its usage at the end; past it, the response
// is passed on unread.
const maxMeteredBody = 8 << 20

// meterBody passes a model API's response through, reading the usage it
// reports: each "data:" line of a stream of server-sent events, or the
// whole body of a JSON answer. The response is counted once, when it ends.
type meterBody struct {
	body  io.ReadCloser
	meter *Meter
	line  []byte
	whole []byte
	sse   bool
	over  bool
	u     responseUsage
	once  sync.Once
}

func (m *Meter) read(body io.ReadCloser) io.ReadCloser {
	return &meterBody{body: body, meter: m}
}

func (b *meterBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.scan(p[:n])
	if err != nil {
		b.done()
	}
	return n, err
}

func (b *meterBody) Close() error {
	b.done()
	return b.body.Close()
}

func (b *meterBody) scan(p []byte) {
	if !b.over && !b.sse {
		if len(b.whole)+len(p) > maxMeteredBody {
			b.over, b.whole = true, nil
		} else {
			b.whole = append(b.whole, p...)
		}
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(b.line)+len(p) <= maxMeteredBody {
				b.line = append(b.line, p...)
			}
			return
		}
		b.line = append(b.line, p[:i]...)
		p = p[i+1:]
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(b.line), []byte("data:")); ok {
			b.sse, b.whole = true, nil
			b.u.take(bytes.TrimSpace(data))
		}
		b.line = b.line[:0]
	}
}

// done counts the response: its events' usage, or its body's.
func (b *meterBody) done() {
	b.once.Do(func() {
		if !b.sse && !b.over {
			whole := bytes.TrimSpace(b.whole)
			var list []json.RawMessage
			if len(whole) > 0 && whole[0] == '[' && json.Unmarshal(whole, &list) == nil {
				for _, obj := range list {
					b.u.take(obj)
				}
			} else {
				b.u.take(whole)
			}
		}
		b.whole, b.line = nil, nil
		b.meter.add(b.u.model, b.u.in, b.u.out, b.u.cached)
	})
}

// responseUsage is one response's usage. Streams report it in steps (a
// running count, or input first and output at the end), so each figure
// is the largest seen.
type responseUsage struct {
	model           string
	in, out, cached int64
}

// wireUsage is where each vendor's response reports its usage: Anthropic
// (message_start's message, message_delta's usage, a message's usage),
// OpenAI's Responses API (response.completed's response), Chat
// Completions (a chunk's usage) and Gemini (usageMetadata).
type wireUsage struct {
	Model         string      `json:"model"`
	ModelVersion  string      `json:"modelVersion"`
	Usage         *tokenCount `json:"usage"`
	UsageMetadata *struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Thoughts   int64 `json:"thoughtsTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	Message  *wireUsage `json:"message"`
	Response *wireUsage `json:"response"`
}

type tokenCount struct {
	Input         int64 `json:"input_tokens"`
	Output        int64 `json:"output_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
	Prompt        int64 `json:"prompt_tokens"`
	Completion    int64 `json:"completion_tokens"`
	InputDetails  *struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (u *responseUsage) take(data []byte) {
	if len(data) == 0 || data[0] != '{' {
		return
	}
	var w wireUsage
	if json.Unmarshal(data, &w) != nil {
		return
	}
	u.takeWire(&w)
}

func (u *responseUsage) takeWire(w *wireUsage) {
	if w.Message != nil {
		u.takeWire(w.Message)
	}
	if w.Response != nil {
		u.takeWire(w.Response)
	}
	if m := w.Model + w.ModelVersion; m != "" && u.model == "" {
		u.model = m
	}
	if c := w.Usage; c != nil {
		// Anthropic counts cached input apart from input_tokens; OpenAI
		// counts it within.
		u.in = max(u.in, c.Input+c.CacheCreation+c.CacheRead, c.Prompt)
		u.out = max(u.out, c.Output, c.Completion)
		u.cached = max(u.cached, c.CacheRead)
		if c.InputDetails != nil {
			u.cached = max(u.cached, c.InputDetails.Cached)
		}
	}
	if g := w.UsageMetadata; g != nil {
		u.in = max(u.in, g.Prompt)
		u.out = max(u.out, g.Candidates+g.Thoughts)
		u.cached = max(u.cached, g.Cached)
	}
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func formatUSD(usd float64) string { return strconv.FormatFloat(usd, 'f', 2, 64) }
