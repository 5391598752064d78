package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

const (
	testToken  = "123456:TEST-token"
	testChat   = int64(-1001)
	testSecret = "hook-secret-1"
)

// apiCall is one Bot API request the fake received.
type apiCall struct {
	Method string
	Form   map[string]string
	At     time.Time
	// MessageID is the id of the message a sendMessage posted.
	MessageID int
}

// fakeTelegram is an httptest fake of the Bot API methods the bot calls.
type fakeTelegram struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []apiCall
	seq     int
	limited map[string]int
	updates chan json.RawMessage
}

func newFakeTelegram(t *testing.T) *fakeTelegram {
	f := &fakeTelegram{limited: map[string]int{}, updates: make(chan json.RawMessage, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeTelegram) serve(w http.ResponseWriter, r *http.Request) {
	prefix := "/bot" + testToken + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		http.NotFound(w, r)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, prefix)
	c := apiCall{Method: method, Form: map[string]string{}, At: time.Now()}
	if err := r.ParseMultipartForm(1 << 20); err == nil {
		for k, v := range r.MultipartForm.Value {
			c.Form[k] = v[0]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if method == "getUpdates" {
		f.serveUpdates(w, r)
		return
	}
	f.mu.Lock()
	if f.limited[method] > 0 {
		f.limited[method]--
		f.got = append(f.got, c)
		f.mu.Unlock()
		fmt.Fprint(w, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}`)
		return
	}
	f.seq++
	id := 100 + f.seq
	if method == "sendMessage" {
		c.MessageID = id
	}
	f.got = append(f.got, c)
	f.mu.Unlock()
	switch method {
	case "getMe":
		fmt.Fprint(w, `{"ok":true,"result":{"id":123456,"is_bot":true,"first_name":"ampflow","username":"ampflow_bot"}}`)
	case "sendMessage":
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%d,"date":1772366400,"chat":{"id":%s,"type":"supergroup"},"text":"x"}}`, id, c.Form["chat_id"])
	case "editMessageText":
		fmt.Fprintf(w, `{"ok":true,"result":{"message_id":%s,"date":1772366400,"chat":{"id":%s,"type":"supergroup"},"text":"x"}}`, c.Form["message_id"], c.Form["chat_id"])
	case "answerCallbackQuery":
		fmt.Fprint(w, `{"ok":true,"result":true}`)
	default:
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
	}
}

// serveUpdates answers a long poll with the queued updates, or an empty
// list after a short hold.
func (f *fakeTelegram) serveUpdates(w http.ResponseWriter, r *http.Request) {
	var batch []json.RawMessage
	select {
	case u := <-f.updates:
		batch = append(batch, u)
	case <-time.After(100 * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	raw, _ := json.Marshal(batch)
	if batch == nil {
		raw = []byte("[]")
	}
	fmt.Fprintf(w, `{"ok":true,"result":%s}`, raw)
}

var updateSeq struct {
	sync.Mutex
	n int64
}

// push queues an update for the next getUpdates, giving it a fresh id.
func (f *fakeTelegram) push(t *testing.T, update string) {
	t.Helper()
	f.updates <- json.RawMessage(withUpdateID(update))
}

func withUpdateID(update string) string {
	updateSeq.Lock()
	defer updateSeq.Unlock()
	updateSeq.n++
	return fmt.Sprintf(`{"update_id":%d,%s`, updateSeq.n, strings.TrimPrefix(update, "{"))
}

func (f *fakeTelegram) calls(method string) []apiCall {
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

func (f *fakeTelegram) limit(method string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limited[method] = n
}

func callbackUpdate(userID int64, first, data string, messageID int) string {
	return fmt.Sprintf(`{"callback_query":{"id":"cq-%d-%s","from":{"id":%d,"is_bot":false,"first_name":%q},
"message":{"message_id":%d,"date":1772366400,"chat":{"id":%d,"type":"supergroup"}},"chat_instance":"ci","data":%q}}`,
		userID, data, userID, first, messageID, testChat, data)
}

func replyUpdate(userID int64, text string, replyTo int) string {
	return fmt.Sprintf(`{"message":{"message_id":%d,"date":1772366400,"from":{"id":%d,"is_bot":false,"first_name":"A"},
"chat":{"id":%d,"type":"supergroup"},"text":%q,"reply_to_message":{"message_id":%d,"date":1772366400,"chat":{"id":%d,"type":"supergroup"}}}}`,
		900+replyTo, userID, testChat, text, replyTo, testChat)
}

// newTestBot returns a bot against a fresh fake, with admins 42 and 43.
func newTestBot(t *testing.T, dec Decider, mode string) (*Bot, *fakeTelegram) {
	t.Helper()
	f := newFakeTelegram(t)
	cfg := config.Telegram{Enabled: true, Mode: mode, Token: testToken, ChatID: fmt.Sprint(testChat),
		Admins: []string{"42", "43"}, ServerURL: f.srv.URL, WebhookSecret: testSecret}
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := New(cfg, dec, log, chattest.SSOT(t), WithHTTPClient(&http.Client{Timeout: 10 * time.Second}, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	testLogs.Store(b, logs)
	return b, f
}

// testLogs holds each test bot's log output.
var testLogs sync.Map

// logBuffer is a log sink safe for the bot's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// logged reports whether b has logged s.
func logged(b *Bot, s string) bool {
	v, _ := testLogs.Load(b)
	l := v.(*logBuffer)
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s)
}

// run runs b until the test ends.
func run(t *testing.T, b *Bot) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
