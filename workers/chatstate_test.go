package workers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot/ssottest"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// TestChatStateSharedByWorkers: with Parts.ChatState set, the bots of two
// workers (each with its own data_dir) post a decision once between them.
func TestChatStateSharedByWorkers(t *testing.T) {
	var posts atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 0
		if strings.HasSuffix(r.URL.Path, "/chat.postMessage") {
			n = int(posts.Add(1))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"channel":"C1","ts":"1.%d"}`, n)
	}))
	defer api.Close()
	db := openLeaseStore(t, ssottest.Engines()[0].URL(t))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := chattest.PlanDecision()
	for range 2 {
		cfg := config.Config{DataDir: t.TempDir(), Slack: config.Slack{Enabled: true, Mode: config.SlackModeHTTP,
			BotToken: "xoxb-test", SigningSecret: "secret", Channel: "#ampflow", Admins: []string{"U1"}, APIURL: api.URL + "/api/"}}
		parts := &Parts{Activities: &activities.Activities{}, ChatState: db}
		if _, err := startChat(Options{Config: cfg}, parts, &runtime{log: log}, log); err != nil {
			t.Fatal(err)
		}
		if err := parts.Activities.Notifier.Notify(context.Background(), chattest.Opened(d)); err != nil {
			t.Fatal(err)
		}
	}
	if n := posts.Load(); n != 1 {
		t.Fatalf("the decision was posted %d times by two workers, want once", n)
	}
}
