package slack

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// apiCall is one Web API request the fake received.
type apiCall struct {
	Method string
	Form   url.Values
	JSON   map[string]any
	At     time.Time
}

// fakeSlack is an httptest fake of the few Web API methods the bot calls.
type fakeSlack struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []apiCall
	seq int
	// limited makes the next n calls of a method answer 429.
	limited map[string]int
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{limited: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	body, _ := io.ReadAll(r.Body)
	c := apiCall{Method: method, At: time.Now()}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(body, &c.JSON)
	} else {
		c.Form, _ = url.ParseQuery(string(body))
	}
	f.mu.Lock()
	f.got = append(f.got, c)
	if f.limited[method] > 0 {
		f.limited[method]--
		f.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	f.seq++
	ts := fmt.Sprintf("1772366400.%06d", f.seq)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch method {
	case "chat.postMessage":
		fmt.Fprintf(w, `{"ok":true,"channel":"C0DEC","ts":%q}`, ts)
	case "chat.update":
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, c.Form.Get("channel"), c.Form.Get("ts"))
	case "chat.postEphemeral":
		fmt.Fprintf(w, `{"ok":true,"message_ts":%q}`, ts)
	case "views.open":
		fmt.Fprint(w, `{"ok":true,"view":{"id":"V1"}}`)
	default:
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

// calls returns the requests of one method so far.
func (f *fakeSlack) calls(method string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apiCall
	for _, c := range f.got {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// limit makes the next n calls of method answer 429 with Retry-After: 1.
func (f *fakeSlack) limit(method string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limited[method] = n
}

const testSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// newTestBot returns a bot in HTTP mode against a fresh fake, with admin U1.
func newTestBot(t *testing.T, dec Decider) (*Bot, *fakeSlack) {
	t.Helper()
	return newTestBotOn(t, dec, chattest.SSOT(t))
}

// newTestBotOn is newTestBot keeping its state in db.
func newTestBotOn(t *testing.T, dec Decider, db *ssot.DB) (*Bot, *fakeSlack) {
	t.Helper()
	f := newFakeSlack(t)
	cfg := config.Slack{Enabled: true, Mode: config.SlackModeHTTP, BotToken: "xoxb-test", SigningSecret: testSecret,
		Channel: "#ampflow", Admins: []string{"U1", "U2"}, APIURL: f.srv.URL + "/api"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := New(cfg, dec, log, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.work.Wait)
	return b, f
}

// blocks returns the blocks a call sent, re-encoded without HTML escaping.
func (c apiCall) blocks(t *testing.T) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(c.Form.Get("blocks")), &v); err != nil {
		t.Fatalf("%s sent unreadable blocks: %v", c.Method, err)
	}
	return strings.TrimSpace(string(jsonText(t, v, "")))
}
