package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
	"github.com/ampflow/ampflow/integrations/telegram/telegramtest"
)

type (
	fakeTelegram = telegramtest.Server
	apiCall      = chattest.Call
)

const (
	testToken  = "123456:TEST-token"
	testChat   = int64(-1001)
	testSecret = "hook-secret-1"
)

var withUpdateID = telegramtest.WithUpdateID

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
	f := telegramtest.New(t, testToken)
	cfg := config.Telegram{Enabled: true, Mode: mode, Token: testToken, ChatID: fmt.Sprint(testChat),
		Admins: []string{"42", "43"}, ServerURL: f.URL(), WebhookSecret: testSecret}
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
