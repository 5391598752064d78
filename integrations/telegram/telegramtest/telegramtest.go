// Package telegramtest is a fake of the Bot API methods ampflow's
// Telegram bot calls, on an httptest server, for the unit and end-to-end
// tests.
package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// DefaultHold is how long an empty getUpdates waits for an update.
const DefaultHold = 500 * time.Millisecond

// Server is the fake. It records every call but getUpdates, answers
// sendMessage with a fresh message_id (101, 102, …), answers getUpdates
// from the updates the test pushes, and can answer 429 to the next calls
// of a method.
type Server struct {
	srv   *httptest.Server
	token string
	// Hold is how long an empty getUpdates waits for an update, so the
	// bot's loop does not spin; set it before the bot polls.
	Hold time.Duration

	mu      sync.Mutex
	calls   []chattest.Call
	updates []update
	wake    chan struct{}
	nextMsg int
	limited map[string]int
	unknown []string
}

type update struct {
	id  int64
	raw json.RawMessage
}

// New starts a fake that takes the bot token token, closed when the test
// ends.
func New(t testing.TB, token string) *Server {
	f := &Server{token: token, Hold: DefaultHold, nextMsg: 100, limited: map[string]int{}, wake: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the fake's base URL (telegram.server_url).
func (f *Server) URL() string { return f.srv.URL }

var updateSeq atomic.Int64

// WithUpdateID gives an update (a JSON object without update_id) a fresh
// update_id, unique in the test binary, so a bot's dedupe never drops it.
func WithUpdateID(update string) string {
	_, s := withID(update)
	return s
}

func withID(update string) (int64, string) {
	id := updateSeq.Add(1)
	return id, fmt.Sprintf(`{"update_id":%d,%s`, id, strings.TrimPrefix(strings.TrimSpace(update), "{"))
}

// Push queues an update for the bot's next getUpdates; its update_id is
// set here. update is a JSON object (a string or json.RawMessage) or a
// value that encodes to one.
func (f *Server) Push(upd any) {
	var s string
	switch u := upd.(type) {
	case string:
		s = u
	case json.RawMessage:
		s = string(u)
	default:
		b, err := json.Marshal(u)
		if err != nil {
			panic(fmt.Sprintf("telegramtest: encoding an update: %v", err))
		}
		s = string(b)
	}
	id, raw := withID(s)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, update{id: id, raw: json.RawMessage(raw)})
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+f.token+"/")
	if !ok {
		reply(w, http.StatusUnauthorized, map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
		return
	}
	form := map[string]string{}
	if err := r.ParseMultipartForm(1 << 20); err == nil {
		for k, v := range r.MultipartForm.Value {
			form[k] = v[0]
		}
	}
	if method == "getUpdates" {
		offset, _ := strconv.ParseInt(form["offset"], 10, 64)
		reply(w, http.StatusOK, map[string]any{"ok": true, "result": f.poll(r, offset)})
		return
	}
	c := chattest.Call{Method: method, Form: form, At: time.Now()}
	f.mu.Lock()
	if f.limited[method] > 0 {
		f.limited[method]--
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		reply(w, http.StatusOK, map[string]any{"ok": false, "error_code": 429,
			"description": "Too Many Requests: retry after 1", "parameters": map[string]any{"retry_after": 1}})
		return
	}
	if method == "sendMessage" {
		f.nextMsg++
		c.NewID = strconv.Itoa(f.nextMsg)
	}
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	chat, _ := strconv.ParseInt(form["chat_id"], 10, 64)
	message := func(id int) map[string]any {
		return map[string]any{"message_id": id, "date": time.Now().Unix(), "text": form["text"],
			"chat": map[string]any{"id": chat, "type": "supergroup", "title": "ampflow test"}}
	}
	switch method {
	case "getMe":
		reply(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{
			"id": 123456, "is_bot": true, "first_name": "ampflow", "username": "ampflow_bot"}})
	case "sendMessage":
		id, _ := strconv.Atoi(c.NewID)
		reply(w, http.StatusOK, map[string]any{"ok": true, "result": message(id)})
	case "editMessageText", "editMessageReplyMarkup":
		id, _ := strconv.Atoi(form["message_id"])
		reply(w, http.StatusOK, map[string]any{"ok": true, "result": message(id)})
	case "answerCallbackQuery", "deleteWebhook":
		reply(w, http.StatusOK, map[string]any{"ok": true, "result": true})
	default:
		f.mu.Lock()
		f.unknown = append(f.unknown, method)
		f.mu.Unlock()
		reply(w, http.StatusNotFound, map[string]any{"ok": false, "error_code": 404, "description": "Not Found: method " + method})
	}
}

// poll returns the updates from offset on, waiting up to Hold for one.
func (f *Server) poll(r *http.Request, offset int64) []json.RawMessage {
	hold := time.NewTimer(f.Hold)
	defer hold.Stop()
	for {
		f.mu.Lock()
		out := []json.RawMessage{}
		for _, u := range f.updates {
			if u.id >= offset {
				out = append(out, u.raw)
			}
		}
		wake := f.wake
		f.mu.Unlock()
		if len(out) > 0 {
			return out
		}
		select {
		case <-wake:
		case <-hold.C:
			return out
		case <-r.Context().Done():
			return out
		}
	}
}

func reply(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// All returns every call so far.
func (f *Server) All() []chattest.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chattest.Call(nil), f.calls...)
}

// Calls returns the calls of method so far.
func (f *Server) Calls(method string) []chattest.Call { return f.Find(method, nil) }

// Find returns the calls of method that satisfy match (every one when
// match is nil).
func (f *Server) Find(method string, match func(chattest.Call) bool) []chattest.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []chattest.Call
	for _, c := range f.calls {
		if c.Method == method && (match == nil || match(c)) {
			out = append(out, c)
		}
	}
	return out
}

// Limit makes the next n calls of method answer 429 with retry_after 1.
func (f *Server) Limit(method string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limited[method] = n
}

// Unserved lists the methods called that the fake does not serve.
func (f *Server) Unserved() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.unknown...)
}
