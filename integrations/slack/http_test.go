package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

func clickPayload(user, token, actionTS string) string {
	return fmt.Sprintf(`{"type":"block_actions","user":{"id":%q},"trigger_id":"trig-%s","channel":{"id":"C0DEC"},
"container":{"type":"message","message_ts":"1772366400.000001","channel_id":"C0DEC"},
"actions":[{"type":"button","action_id":"ampflow_opt_x","block_id":"ampflow_options","value":%q,"action_ts":%q}]}`,
		user, actionTS, token, actionTS)
}

func notePayload(user, token, note, viewID string) string {
	return fmt.Sprintf(`{"type":"view_submission","user":{"id":%q},"view":{"id":%q,"hash":"h1","callback_id":"ampflow_note",
"private_metadata":%q,"state":{"values":{"note":{"note_text":{"type":"plain_text_input","value":%q}}}}}}`,
		user, viewID, token, note)
}

// signedRequest builds an interaction request signed with secret at the
// given time.
func signedRequest(payload, secret string, at time.Time) *http.Request {
	body := url.Values{"payload": {payload}}.Encode()
	r := httptest.NewRequest(http.MethodPost, InteractionsPath, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	r.Header.Set("X-Slack-Request-Timestamp", ts)
	r.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return r
}

func serve(b *Bot, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	b.Handler().ServeHTTP(w, r)
	return w
}

// posted returns a bot with d posted and its tokens.
func postedBot(t *testing.T, dec Decider, d decision.Decision) (*Bot, *fakeSlack, []string) {
	t.Helper()
	b, f := newTestBot(t, dec)
	if err := b.Notify(context.Background(), chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	return b, f, tokensOf(t, b, d)
}

func TestClickByAdminDecides(t *testing.T) {
	dec := &chattest.Decider{}
	d := chattest.PlanDecision()
	b, f, tokens := postedBot(t, dec, d)
	if w := serve(b, signedRequest(clickPayload("U1", tokens[0], "1.1"), testSecret, time.Now())); w.Code != http.StatusOK {
		t.Fatalf("status %d, want 200", w.Code)
	}
	chattest.WaitFor(t, "the edit", func() bool { return len(f.Calls("chat.update")) == 1 })
	in := dec.Inputs()
	want := decision.Answer{DecisionID: d.ID, Option: decision.OptApprove, By: "slack:U1", Channel: "slack"}
	if len(in) != 1 || in[0] != want {
		t.Fatalf("Decide got %+v, want [%+v]", in, want)
	}
	if blocks := blocksOf(t, f.Calls("chat.update")[0]); strings.Contains(blocks, `"actions"`) || !strings.Contains(blocks, "<@U1>") {
		t.Errorf("edit keeps buttons or does not say who decided: %s", blocks)
	}
	// The workflow's closing notice then finds nothing left to edit.
	if err := b.Notify(context.Background(), chattest.Closed(d, chattest.Outcome(d, decision.OptApprove, "slack:U1", "slack", ""))); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls("chat.update")); n != 1 {
		t.Errorf("got %d edits after the closing notice, want 1", n)
	}
}

func TestClickByNonAdminRefused(t *testing.T) {
	dec := &chattest.Decider{}
	b, f, tokens := postedBot(t, dec, chattest.PlanDecision())
	if w := serve(b, signedRequest(clickPayload("U666", tokens[0], "1.1"), testSecret, time.Now())); w.Code != http.StatusOK {
		t.Fatalf("status %d, want 200 (acknowledged, then refused)", w.Code)
	}
	chattest.WaitFor(t, "the refusal", func() bool { return len(f.Calls("chat.postEphemeral")) == 1 })
	b.work.Wait()
	e := f.Calls("chat.postEphemeral")[0]
	if e.Form["user"] != "U666" || !strings.Contains(e.Form["text"], "Only ampflow admins") {
		t.Errorf("refusal went to %q saying %q", e.Form["user"], e.Form["text"])
	}
	if in := dec.Inputs(); len(in) != 0 {
		t.Errorf("a non-admin's click reached the workflow: %+v", in)
	}
	if n := len(f.Calls("chat.update")); n != 0 {
		t.Errorf("a refused click edited the message %d times", n)
	}
}

func TestSimultaneousClicksMakeOneDecision(t *testing.T) {
	dec := &chattest.Decider{}
	d := chattest.PlanDecision()
	b, f, tokens := postedBot(t, dec, d)
	var wg sync.WaitGroup
	for i, user := range []string{"U1", "U2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serve(b, signedRequest(clickPayload(user, tokens[0], fmt.Sprintf("2.%d", i)), testSecret, time.Now()))
		}()
	}
	wg.Wait()
	chattest.WaitFor(t, "the loser told", func() bool { return len(f.Calls("chat.postEphemeral")) == 1 })
	b.work.Wait()
	decided := dec.Decisions()
	n := len(decided)
	winner := decided[d.ID].By
	if n != 1 {
		t.Fatalf("%d decisions taken, want 1", n)
	}
	e := f.Calls("chat.postEphemeral")[0]
	if "slack:"+e.Form["user"] == winner {
		t.Errorf("the winner %s was told off", winner)
	}
	if text := e.Form["text"]; !strings.Contains(strings.ToLower(text), "already decided") || !strings.Contains(text, winner) {
		t.Errorf("loser told %q, want already decided by %s", text, winner)
	}
	if n := len(f.Calls("chat.update")); n != 1 {
		t.Errorf("got %d edits, want 1", n)
	}
}

func TestRedeliveryDeduplicated(t *testing.T) {
	dec := &chattest.Decider{}
	b, f, tokens := postedBot(t, dec, chattest.PlanDecision())
	payload := clickPayload("U1", tokens[0], "3.1")
	serve(b, signedRequest(payload, testSecret, time.Now()))
	retry := signedRequest(payload, testSecret, time.Now())
	retry.Header.Set("X-Slack-Retry-Num", "1")
	retry.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	if w := serve(b, retry); w.Code != http.StatusOK {
		t.Fatalf("redelivery status %d, want 200", w.Code)
	}
	chattest.WaitFor(t, "the edit", func() bool { return len(f.Calls("chat.update")) == 1 })
	b.work.Wait()
	if in := dec.Inputs(); len(in) != 1 {
		t.Errorf("Decide called %d times for one click delivered twice", len(in))
	}
	if n := len(f.Calls("chat.postEphemeral")); n != 0 {
		t.Errorf("the redelivery produced %d messages", n)
	}
}

func TestSignatureRefused(t *testing.T) {
	dec := &chattest.Decider{}
	b, f, tokens := postedBot(t, dec, chattest.PlanDecision())
	payload := clickPayload("U1", tokens[0], "4.1")
	unsigned := signedRequest(payload, testSecret, time.Now())
	unsigned.Header.Del("X-Slack-Signature")
	tampered := signedRequest(payload, testSecret, time.Now())
	tampered.Header.Set("X-Slack-Signature", strings.Replace(tampered.Header.Get("X-Slack-Signature"), "v0=", "v0=0", 1)[:len("v0=")+64])
	tests := []struct {
		name string
		r    *http.Request
	}{
		{"Forged", signedRequest(payload, "not-the-secret", time.Now())},
		{"Stale", signedRequest(payload, testSecret, time.Now().Add(-6*time.Minute))},
		{"Future", signedRequest(payload, testSecret, time.Now().Add(6*time.Minute))},
		{"Unsigned", unsigned},
		{"Tampered", tampered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w := serve(b, tt.r); w.Code != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", w.Code)
			}
		})
	}
	b.work.Wait()
	if in := dec.Inputs(); len(in) != 0 {
		t.Errorf("refused requests reached the workflow: %+v", in)
	}
	if n := len(f.Calls("chat.postEphemeral")) + len(f.Calls("chat.update")); n != 0 {
		t.Errorf("refused requests made %d Slack calls", n)
	}
	if w := serve(b, signedRequest(payload, testSecret, time.Now().Add(-4*time.Minute))); w.Code != http.StatusOK {
		t.Errorf("a request signed 4 minutes ago got %d, want 200", w.Code)
	}
}

func TestNoteOptionOpensModal(t *testing.T) {
	dec := &chattest.Decider{}
	d := chattest.PlanDecision()
	b, f, tokens := postedBot(t, dec, d)
	serve(b, signedRequest(clickPayload("U1", tokens[1], "5.1"), testSecret, time.Now()))
	chattest.WaitFor(t, "views.open", func() bool { return len(f.Calls("views.open")) == 1 })
	v := f.Calls("views.open")[0].JSON
	view, _ := v["view"].(map[string]any)
	if v["trigger_id"] != "trig-5.1" || view["private_metadata"] != tokens[1] || view["callback_id"] != noteCallbackID {
		t.Fatalf("views.open got %v", v)
	}
	if in := dec.Inputs(); len(in) != 0 {
		t.Fatalf("decided before the note: %+v", in)
	}

	w := serve(b, signedRequest(notePayload("U1", tokens[1], "   ", "V1"), testSecret, time.Now()))
	if !strings.Contains(w.Body.String(), `"response_action":"errors"`) {
		t.Errorf("an empty note was answered %q, want a field error", w.Body.String())
	}
	if w := serve(b, signedRequest(notePayload("U1", tokens[1], "Scope too wide", "V1"), testSecret, time.Now())); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("submission answered %d %q, want an empty 200 that closes the modal", w.Code, w.Body.String())
	}
	chattest.WaitFor(t, "the decision", func() bool { return len(dec.Inputs()) == 1 })
	want := decision.Answer{DecisionID: d.ID, Option: decision.OptReject, Note: "Scope too wide", By: "slack:U1", Channel: "slack"}
	if got := dec.Inputs()[0]; got != want {
		t.Errorf("Decide got %+v, want %+v", got, want)
	}
	chattest.WaitFor(t, "the edit", func() bool { return len(f.Calls("chat.update")) == 1 })
	if !strings.Contains(blocksOf(t, f.Calls("chat.update")[0]), "Scope too wide") {
		t.Error("the edit does not show the note")
	}
}

func TestNoteFromNonAdminRefused(t *testing.T) {
	dec := &chattest.Decider{}
	b, f, tokens := postedBot(t, dec, chattest.PlanDecision())
	serve(b, signedRequest(notePayload("U666", tokens[1], "let me", "V2"), testSecret, time.Now()))
	chattest.WaitFor(t, "the refusal", func() bool { return len(f.Calls("chat.postEphemeral")) == 1 })
	b.work.Wait()
	if in := dec.Inputs(); len(in) != 0 {
		t.Errorf("a non-admin's note reached the workflow: %+v", in)
	}
}

type fakeAcker struct {
	mu   sync.Mutex
	acks []socketmode.Request
}

func (a *fakeAcker) Ack(req socketmode.Request, _ ...any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acks = append(a.acks, req)
	return nil
}

func TestSocketModeAcksThenDecides(t *testing.T) {
	dec := &chattest.Decider{}
	d := chattest.PlanDecision()
	b, f, tokens := postedBot(t, dec, d)
	var cb = mustCallback(t, clickPayload("U1", tokens[0], "6.1"))
	a := &fakeAcker{}
	b.socketEvent(socketmode.Event{Type: socketmode.EventTypeInteractive, Data: cb, Request: &socketmode.Request{EnvelopeID: "env-1"}}, a)
	if len(a.acks) != 1 || a.acks[0].EnvelopeID != "env-1" {
		t.Fatalf("acks %+v, want env-1 acknowledged before any work", a.acks)
	}
	chattest.WaitFor(t, "the edit", func() bool { return len(f.Calls("chat.update")) == 1 })
	if in := dec.Inputs(); len(in) != 1 || in[0].By != "slack:U1" || in[0].Channel != "slack" {
		t.Errorf("Decide got %+v", in)
	}
	// Slack redelivers an envelope it thinks was lost: acknowledged, no effect.
	b.socketEvent(socketmode.Event{Type: socketmode.EventTypeInteractive, Data: cb, Request: &socketmode.Request{EnvelopeID: "env-1", RetryAttempt: 1}}, a)
	b.work.Wait()
	if len(a.acks) != 2 || len(dec.Inputs()) != 1 {
		t.Errorf("redelivered envelope: %d acks, %d decisions; want 2 and 1", len(a.acks), len(dec.Inputs()))
	}
}

func mustCallback(t *testing.T, payload string) slackapi.InteractionCallback {
	t.Helper()
	var cb slackapi.InteractionCallback
	if err := json.Unmarshal([]byte(payload), &cb); err != nil {
		t.Fatal(err)
	}
	return cb
}
