// Package slacktest is a fake of the few Slack Web API methods ampflow's
// bot calls, on an httptest server, for the unit and end-to-end tests.
package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// Server is the fake. It records every call, answers chat.postMessage
// with a fresh ts, and can answer 429 to the next calls of a method.
type Server struct {
	srv   *httptest.Server
	token string
	// Channel, when set, is the channel id chat.postMessage answers
	// with, as Slack answers a channel's name with its id; empty answers
	// the channel posted to.
	Channel string

	mu      sync.Mutex
	calls   []chattest.Call
	seq     int
	limited map[string]int
	unknown []string
}

// New starts a fake that takes the bot token token, closed when the test
// ends.
func New(t testing.TB, token string) *Server {
	f := &Server{token: token, limited: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the fake's base URL.
func (f *Server) URL() string { return f.srv.URL }

// APIURL is the Web API base to configure (slack.api_url).
func (f *Server) APIURL() string { return f.srv.URL + "/api/" }

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	body, _ := io.ReadAll(r.Body)
	c := chattest.Call{Method: method, Form: map[string]string{}, At: time.Now()}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(body, &c.JSON)
	} else {
		vals, _ := url.ParseQuery(string(body))
		for k, v := range vals {
			c.Form[k] = v[0]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+f.token && c.Form["token"] != f.token {
		fmt.Fprint(w, `{"ok":false,"error":"invalid_auth"}`)
		return
	}
	f.mu.Lock()
	if f.limited[method] > 0 {
		f.limited[method]--
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	f.seq++
	ts := fmt.Sprintf("1772366400.%06d", f.seq)
	if method == "chat.postMessage" {
		c.NewID = ts
	}
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	enc := json.NewEncoder(w)
	switch method {
	case "chat.postMessage":
		channel := f.Channel
		if channel == "" {
			channel = c.Form["channel"]
		}
		_ = enc.Encode(map[string]any{"ok": true, "channel": channel, "ts": ts})
	case "chat.update":
		_ = enc.Encode(map[string]any{"ok": true, "channel": c.Form["channel"], "ts": c.Form["ts"], "text": c.Form["text"]})
	case "chat.postEphemeral":
		_ = enc.Encode(map[string]any{"ok": true, "message_ts": ts})
	case "views.open":
		fmt.Fprint(w, `{"ok":true,"view":{"id":"V1"}}`)
	case "auth.test":
		_ = enc.Encode(map[string]any{"ok": true, "user_id": "UBOT", "team_id": "T1", "user": "ampflow"})
	default:
		f.mu.Lock()
		f.unknown = append(f.unknown, method)
		f.mu.Unlock()
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
	}
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

// Limit makes the next n calls of method answer 429 with Retry-After: 1.
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
