// Package fakemodel serves loopback fakes of the model APIs that the agent
// CLIs call, so tests can drive the real CLIs offline. One Server speaks four
// dialects, chosen by the request's path:
//
//   - Anthropic Messages, POST /v1/messages (Claude Code)
//   - OpenAI Responses, POST /v1/responses (Codex)
//   - Gemini, POST /v1beta/models/{model}:streamGenerateContent?alt=sse and
//     :generateContent (Gemini CLI)
//   - OpenAI Chat Completions, POST /v1/chat/completions (OpenCode with an
//     OpenAI-compatible provider)
//
// The server plays a script: every agent request (one that offers the model
// tools) gets the next Turn. Side requests the CLIs make on their own, such as
// title generation or a quota probe, offer no tools; they get a short text
// reply and do not use up a turn. A client's retry of a request whose
// turn was written (the same path and conversation, after its stream was
// cut, say) gets that turn again, as a model answers the same conversation the same
// way: a retry does not shift the script. A turn never written (a hang, a
// hold the client left, an error status) is not given again. A turn may be
// For one run (a text in its requests) and for one Key (an account). Every request is recorded, so a test
// can assert what reached the model, for example a tool's output.
package fakemodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
)

// Turn is one scripted reply of the model.
type Turn struct {
	// Text is the assistant text. A turn with text and no tool call ends the
	// agent's loop.
	Text string
	// Tool, when set, is a tool call the model makes after its text.
	Tool *ToolCall
	// More are further tool calls of the same message, after Tool; only
	// the Messages API (Claude Code) sends them.
	More []*ToolCall
	// Hang holds the response open after its headers and sends nothing
	// until the client goes away or the server closes.
	Hang bool
	// Hold, when set, holds the reply until it is closed (or the client
	// goes away, or the server closes): a test sees what the agent did
	// before it answers.
	Hold <-chan struct{}
	// Status, when not 0 or 200, answers with this HTTP status and Body
	// instead of a stream (for example 429 or 401). Header is added to it.
	Status int
	Body   string
	Header http.Header
	// InputTokens and OutputTokens are reported as usage; 0 means a default.
	InputTokens, OutputTokens int64
	// For, when set, is text only the requests this turn is meant for
	// contain (Request.Text): an agent request takes the first turn not
	// yet served that is for it (its For text, or no For), so the turns
	// of several runs that go at once can share one script, each run's
	// in order; a request no such turn is left for gets a side reply.
	For string
	// Key, when set, is the only credential the turn answers
	// (Request.Key): an agent request with another key does not take it,
	// so a test can tell apart the accounts of one runner.
	Key string
}

// ToolCall is a call of one of the CLI's tools, by the CLI's own name for it.
type ToolCall struct {
	Name  string
	Input any // marshalled to JSON as the call's arguments
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string // including the query
	Header http.Header
	Body   []byte
	// Turn is the index of the script turn it got, or -1 for a side request
	// or one after the script ran out.
	Turn int
	// Retry is set on a repeat of an earlier agent request (the same
	// conversation) whose turn Turn was written: it was answered with
	// that turn again.
	Retry bool
}

// Key is the API key the request carries, as each API takes it: the
// Authorization bearer (OpenAI), x-api-key (Anthropic), x-goog-api-key or
// the key query parameter (Gemini). Empty when it has none.
func (r Request) Key() string {
	if k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(k)
	}
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		if k := r.Header.Get(h); k != "" {
			return k
		}
	}
	if _, q, ok := strings.Cut(r.Path, "?"); ok {
		if v, err := url.ParseQuery(q); err == nil {
			return v.Get("key")
		}
	}
	return ""
}

// Text reports whether s occurs in the request body, either as is or as it
// reads inside a JSON string.
func (r Request) Text(s string) bool {
	if bytes.Contains(r.Body, []byte(s)) {
		return true
	}
	q, _ := json.Marshal(s)
	return bytes.Contains(r.Body, q[1:len(q)-1])
}

// Exhausted is the text the server answers once the script has no turn left.
const Exhausted = "fakemodel: the script has no more turns"

// SideReply is the text of replies to side requests.
const SideReply = "ok"

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	srv    *httptest.Server
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	turns    []Turn
	served   []bool
	next     int // the number of turns served
	requests []Request
	ids      int
	changed  chan struct{}
	// answered maps an agent request (its path and conversation) to the
	// turn written to it, for the client's retries of it.
	answered map[[sha256.Size]byte]int
}

// New starts a server on 127.0.0.1 that plays turns in order.
func New(turns ...Turn) *Server {
	s := &Server{turns: turns, served: make([]bool, len(turns)), closed: make(chan struct{}), changed: make(chan struct{}), answered: map[[sha256.Size]byte]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the server's base URL, http://127.0.0.1:PORT, without a path.
func (s *Server) URL() string { return s.srv.URL }

// Close releases hanging responses and stops the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closed) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// AgentRequests returns the requests that got a script turn, in order,
// without the client's retries of them.
func (s *Server) AgentRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Turn >= 0 && !r.Retry {
			out = append(out, r)
		}
	}
	return out
}

// Served is the number of script turns handed out so far.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Changed returns a channel that is closed at the next request, so a test
// can wait for one without polling.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// dialect writes one reply in an API's format.
type dialect interface {
	// agent reports whether the request body offers tools.
	agent(body []byte) bool
	// stream reports whether the client asked for a streamed reply.
	stream(r *http.Request, body []byte) bool
	writeStream(w *sseWriter, t Turn, c call)
	writeJSON(w http.ResponseWriter, t Turn, c call)
}

// call is what a dialect needs to know about the request it answers.
type call struct {
	model string
	id    string // unique per reply
	seq   int
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var d dialect
	var model string
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		d, model = anthropic{}, jsonModel(body)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		d, model = responses{}, jsonModel(body)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		d, model = chat{}, jsonModel(body)
	case r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/models/") && strings.Contains(r.URL.Path, ":"):
		name := r.URL.Path[strings.LastIndex(r.URL.Path, "/models/")+len("/models/"):]
		m, method, _ := strings.Cut(name, ":")
		model = m
		switch method {
		case "streamGenerateContent", "generateContent":
			d = gemini{}
		case "countTokens":
			s.record(r, body, -1, false)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"totalTokens":%d}`, len(body)/4)
			return
		}
	}
	if d == nil {
		s.record(r, body, -1, false)
		http.Error(w, `{"error":{"message":"fakemodel: no such route"}}`, http.StatusNotFound)
		return
	}

	turn, idx, retry := Turn{Text: SideReply}, -1, false
	key := sha256.Sum256(append([]byte(r.URL.Path+"\n"), conversation(body)...))
	if d.agent(body) {
		s.mu.Lock()
		prev, seen := s.answered[key]
		free := s.free(Request{Header: r.Header, Path: r.URL.RequestURI(), Body: body})
		switch {
		case seen:
			turn, idx, retry = s.turns[prev], prev, true
		case free >= 0:
			turn, idx = s.turns[free], free
			s.served[free] = true
			s.next++
		case s.next == len(s.turns):
			turn = Turn{Text: Exhausted}
		default:
			// Turns are left, for other requests: a side reply.
		}
		s.mu.Unlock()
	}
	c := call{model: model, id: s.record(r, body, idx, retry)}
	if c.model == "" {
		c.model = "fake-model"
	}

	if turn.Hold != nil {
		select {
		case <-turn.Hold:
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		}
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		for k, vs := range turn.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		io.WriteString(w, turn.Body)
		return
	}
	if !d.stream(r, body) {
		if turn.Hang {
			s.hang(r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		d.writeJSON(w, turn, c)
		s.written(key, idx)
		return
	}
	sw := newSSE(w)
	if turn.Hang {
		sw.flush()
		s.hang(r)
		return
	}
	d.writeStream(sw, turn, c)
	s.written(key, idx)
}

// written notes that turn idx was written to the agent request key, for
// its retries.
func (s *Server) written(key [sha256.Size]byte, idx int) {
	if idx < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.answered[key]; !ok {
		s.answered[key] = idx
	}
}

// free is the first turn not yet served that r may take, -1 when there
// is none; s.mu is held.
func (s *Server) free(r Request) int {
	for i, t := range s.turns {
		if !s.served[i] && (t.For == "" || r.Text(t.For)) && (t.Key == "" || r.Key() == t.Key) {
			return i
		}
	}
	return -1
}

func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closed:
	}
}

func (s *Server) record(r *http.Request, body []byte, turn int, retry bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body, Turn: turn, Retry: retry,
	})
	s.ids++
	close(s.changed)
	s.changed = make(chan struct{})
	return fmt.Sprintf("%d", s.ids)
}

// conversation is what a model answers in a request: its messages
// (Messages and Chat Completions), input (Responses) or contents (Gemini),
// as sent; the whole body when it has none. A client's retry may change
// other fields (a retry count, a request id), never these.
func conversation(body []byte) []byte {
	var v map[string]json.RawMessage
	if json.Unmarshal(body, &v) == nil {
		for _, k := range []string{"messages", "input", "contents"} {
			if c, ok := v[k]; ok {
				return c
			}
		}
	}
	return body
}

func jsonModel(body []byte) string {
	var v struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &v)
	return v.Model
}

// hasTools reports whether the JSON object body has a non-empty "tools" array.
func hasTools(body []byte) bool {
	var v struct {
		Tools []json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(body, &v)
	return len(v.Tools) > 0
}

func toolArgs(t *ToolCall) string {
	b, err := json.Marshal(t.Input)
	if err != nil || t.Input == nil {
		return "{}"
	}
	return string(b)
}

func usage(t Turn) (in, out int64) {
	in, out = t.InputTokens, t.OutputTokens
	if in == 0 {
		in = 100
	}
	if out == 0 {
		out = 10
	}
	return in, out
}

// sseWriter writes server-sent events and flushes after each.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, f: f}
}

// event writes one event; name may be empty, data is marshalled to JSON
// unless it is a string already.
func (s *sseWriter) event(name string, data any) {
	var b []byte
	switch v := data.(type) {
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.flush()
}

func (s *sseWriter) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}
