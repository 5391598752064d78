package slack

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
	"github.com/ampflow/ampflow/integrations/slack/slacktest"
)

type (
	fakeSlack = slacktest.Server
	apiCall   = chattest.Call
)

const (
	testToken  = "xoxb-test"
	testSecret = "8f742231b10e8888abcd99yyyzzz85a5"
)

// newFakeSlack starts a fake that answers posts to #ampflow from C0DEC.
func newFakeSlack(t *testing.T) *fakeSlack {
	f := slacktest.New(t, testToken)
	f.Channel = "C0DEC"
	return f
}

// newTestBot returns a bot in HTTP mode against a fresh fake, with admin U1.
func newTestBot(t *testing.T, dec Decider) (*Bot, *fakeSlack) {
	t.Helper()
	return newTestBotOn(t, dec, chattest.SSOT(t))
}

// newTestBotOn is newTestBot keeping its state in db.
func newTestBotOn(t *testing.T, dec Decider, db *ssot.DB) (*Bot, *fakeSlack) {
	t.Helper()
	f := newFakeSlack(t)
	cfg := config.Slack{Enabled: true, Mode: config.SlackModeHTTP, BotToken: testToken, SigningSecret: testSecret,
		Channel: "#ampflow", Admins: []string{"U1", "U2"}, APIURL: f.URL() + "/api"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := New(cfg, dec, log, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.work.Wait)
	return b, f
}

// blocksOf returns the blocks a call sent, re-encoded without HTML escaping.
func blocksOf(t *testing.T, c apiCall) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(c.Form["blocks"]), &v); err != nil {
		t.Fatalf("%s sent unreadable blocks: %v", c.Method, err)
	}
	return strings.TrimSpace(string(jsonText(t, v, "")))
}
