package telegram

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
	"github.com/ampflow/ampflow/integrations/slack"
	"github.com/ampflow/ampflow/integrations/slack/slacktest"
)

// slackCount counts the calls of method the Slack fake took and returns
// the last one.
func slackCount(f *slacktest.Server, method string) (n int, last apiCall) {
	calls := f.Calls(method)
	if len(calls) > 0 {
		last = calls[len(calls)-1]
	}
	return len(calls), last
}

func TestFirstDecisionWinsAcrossChannels(t *testing.T) {
	dec := &chattest.Decider{}
	d := chattest.PlanDecision()
	tg, tf := newTestBot(t, dec, config.TelegramModeWebhook)

	sc := slacktest.New(t, "xoxb-x")
	sc.Channel = "C1"
	slackDB := chattest.SSOT(t)
	sb, err := slack.New(config.Slack{Mode: config.SlackModeHTTP, BotToken: "xoxb-x", SigningSecret: "sign", Channel: "C1",
		Admins: []string{"U1"}, APIURL: sc.APIURL()}, dec, slog.New(slog.NewTextHandler(io.Discard, nil)), slackDB)
	if err != nil {
		t.Fatal(err)
	}
	both := notify.Notifiers{sb, tg}
	if err := both.Notify(context.Background(), chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	run(t, tg)
	ctx, cancel := context.WithCancel(context.Background())
	slackDone := make(chan error, 1)
	go func() { slackDone <- sb.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-slackDone })

	slackToken := slackTokenFor(t, slackDB, d.ID, decision.OptApprove)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		deliver(tg, withUpdateID(callbackUpdate(42, "Ana", tokensOf(t, tg, d)[0], messageOf(t, tg, d.ID))), testSecret)
	}()
	go func() {
		defer wg.Done()
		w := httptest.NewRecorder()
		sb.Handler().ServeHTTP(w, slackClick(t, "U1", slackToken, "sign"))
	}()
	wg.Wait()

	// Exactly one wins; the other learns who did.
	chattest.WaitFor(t, "both clicks handled", func() bool {
		eph, _ := slackCount(sc, "chat.postEphemeral")
		slackEdited, _ := slackCount(sc, "chat.update")
		return len(answers(tf)) == 1 && eph+slackEdited >= 1
	})
	decided := dec.Decisions()
	if len(decided) != 1 {
		t.Fatalf("%d decisions, want 1", len(decided))
	}
	winner := decided[d.ID]
	if winner.Channel == "slack" {
		a := answers(tf)[0]
		if a.Form["show_alert"] != "true" || !strings.Contains(strings.ToLower(a.Form["text"]), "already decided by slack:u1") {
			t.Errorf("Telegram loser answered %v", a.Form)
		}
	} else {
		chattest.WaitFor(t, "the Slack loser told", func() bool { n, _ := slackCount(sc, "chat.postEphemeral"); return n == 1 })
		_, e := slackCount(sc, "chat.postEphemeral")
		if !strings.Contains(strings.ToLower(e.Form["text"]), "already decided by telegram:42") {
			t.Errorf("Slack loser told %q", e.Form["text"])
		}
	}

	// The workflow's closing notice goes to both; every copy ends edited once.
	if err := both.Notify(context.Background(), chattest.Closed(d, winner)); err != nil {
		t.Fatal(err)
	}
	if n, _ := slackCount(sc, "chat.update"); n != 1 {
		t.Errorf("Slack copy edited %d times, want 1", n)
	}
	if n := len(tf.Calls("editMessageText")); n != 1 {
		t.Errorf("Telegram copy edited %d times, want 1", n)
	}
}

// slackTokenFor reads a button token from the Slack bot's state.
func slackTokenFor(t *testing.T, db *ssot.DB, decisionID, option string) string {
	t.Helper()
	buttons, err := db.ChatButtons(context.Background(), slack.Channel, decisionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range buttons {
		if b.Option == option {
			return b.Token
		}
	}
	t.Fatalf("no Slack token for %s/%s", decisionID, option)
	return ""
}

func slackClick(t *testing.T, user, token, secret string) *http.Request {
	t.Helper()
	payload := fmt.Sprintf(`{"type":"block_actions","user":{"id":%q},"trigger_id":"tr","channel":{"id":"C1"},
"actions":[{"type":"button","action_id":"ampflow_opt_approve","block_id":"ampflow_options","value":%q,"action_ts":"9.9"}]}`, user, token)
	body := url.Values{"payload": {payload}}.Encode()
	r := httptest.NewRequest(http.MethodPost, slack.InteractionsPath, strings.NewReader(body))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	r.Header.Set("X-Slack-Request-Timestamp", ts)
	r.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return r
}
