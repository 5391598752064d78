package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// tokensOf returns the callback data of a posted decision in option order.
func tokensOf(t *testing.T, b *Bot, d decision.Decision) []string {
	t.Helper()
	buttons, err := b.core.State.Buttons(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	return chattest.Tokens(buttons, d)
}

// messageOf returns the message id a decision was posted as.
func messageOf(t *testing.T, b *Bot, id string) int {
	t.Helper()
	p, ok, err := b.core.State.Posted(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || len(p.Messages) == 0 {
		return 0
	}
	return p.Messages[0].MessageID
}

func keyboard(t *testing.T, c apiCall) models.InlineKeyboardMarkup {
	t.Helper()
	var kb models.InlineKeyboardMarkup
	if err := json.Unmarshal([]byte(c.Form["reply_markup"]), &kb); err != nil {
		t.Fatalf("%s reply_markup %q: %v", c.Method, c.Form["reply_markup"], err)
	}
	return kb
}

func TestNotifyPostsDecision(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{}, config.TelegramModePolling)
	d := chattest.LockDecision()
	if err := b.Notify(context.Background(), chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	sent := f.Calls("sendMessage")
	if len(sent) != 1 {
		t.Fatalf("got %d messages, want 1", len(sent))
	}
	tokens := tokensOf(t, b, d)
	want := RenderDecision(d, tokens)
	c := sent[0]
	if c.Form["chat_id"] != fmt.Sprint(testChat) || c.Form["parse_mode"] != "HTML" || c.Form["text"] != want.Text {
		t.Errorf("sent chat %s, mode %s, text:\n%s\nwant the rendering:\n%s", c.Form["chat_id"], c.Form["parse_mode"], c.Form["text"], want.Text)
	}
	kb := keyboard(t, c)
	if len(kb.InlineKeyboard) != 3 || kb.InlineKeyboard[2][0].CallbackData != tokens[2] || tokens[2] == "" {
		t.Errorf("keyboard %+v, want 3 buttons carrying the tokens %v", kb, tokens)
	}
	for _, tok := range tokens {
		if len(tok) > 64 || strings.Contains(tok, d.ID) {
			t.Errorf("token %q is not short and opaque", tok)
		}
	}
	if messageOf(t, b, d.ID) == 0 {
		t.Error("the posted message is not in the state")
	}
}

func TestNotifyIdempotent(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{}, config.TelegramModePolling)
	esc := notify.Input{TaskID: "T-2026-002", Event: notify.Escalation, Message: chattest.LockDecision().Escalation}
	status := notify.Input{TaskID: "T-2026-002", Event: notify.Status, Status: task.StatusInReview}
	for range 3 {
		for _, in := range []notify.Input{chattest.Opened(chattest.PlanDecision()), esc, status} {
			if err := b.Notify(context.Background(), in); err != nil {
				t.Fatal(err)
			}
		}
	}
	sent := f.Calls("sendMessage")
	if len(sent) != 3 {
		t.Fatalf("got %d messages for 3 notices each sent 3 times, want 3", len(sent))
	}
	if _, ok := sent[1].Form["reply_markup"]; ok || !strings.Contains(sent[1].Form["text"], "hallucination_lock") {
		t.Errorf("escalation has buttons or lacks its type: %v", sent[1].Form)
	}
	if !strings.Contains(sent[2].Form["text"], "in review") {
		t.Errorf("status message %q", sent[2].Form["text"])
	}
}

func TestNotifyClosedEditsOnce(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{}, config.TelegramModePolling)
	d := chattest.PlanDecision()
	ctx := context.Background()
	if err := b.Notify(ctx, chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	o := chattest.Outcome(d, decision.OptApprove, "slack:U1", "slack", "")
	for range 2 {
		if err := b.Notify(ctx, chattest.Closed(d, o)); err != nil {
			t.Fatal(err)
		}
	}
	edits := f.Calls("editMessageText")
	if len(edits) != 1 {
		t.Fatalf("got %d edits, want 1", len(edits))
	}
	e := edits[0]
	if e.Form["message_id"] != fmt.Sprint(messageOf(t, b, d.ID)) || e.Form["text"] != RenderClosed(d, o).Text {
		t.Errorf("edit of message %s:\n%s", e.Form["message_id"], e.Form["text"])
	}
	if kb := keyboard(t, e); len(kb.InlineKeyboard) != 0 {
		t.Errorf("edit keeps %d button rows", len(kb.InlineKeyboard))
	}
}

func TestRateLimitRetriedAfterRetryAfter(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{}, config.TelegramModePolling)
	f.Limit("sendMessage", 1)
	if err := b.Notify(context.Background(), chattest.Opened(chattest.PlanDecision())); err != nil {
		t.Fatal(err)
	}
	sent := f.Calls("sendMessage")
	if len(sent) != 2 {
		t.Fatalf("got %d attempts, want 2", len(sent))
	}
	if gap := sent[1].At.Sub(sent[0].At); gap < time.Second {
		t.Errorf("retried after %v, want at least retry_after 1s", gap)
	}
	if messageOf(t, b, chattest.PlanDecision().ID) == 0 {
		t.Error("decision not recorded after the retry")
	}
}

func TestRateLimitBounded(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{}, config.TelegramModePolling)
	b.maxRetries = 1
	var waited []time.Duration
	b.sleep = func(_ context.Context, d time.Duration) error { waited = append(waited, d); return nil }
	f.Limit("sendMessage", 5)
	if err := b.Notify(context.Background(), chattest.Opened(chattest.PlanDecision())); err == nil {
		t.Fatal("Notify succeeded through a lasting rate limit")
	}
	if n := len(f.Calls("sendMessage")); n != 2 || len(waited) != 1 || waited[0] != time.Second {
		t.Errorf("%d attempts, waits %v; want 2 attempts and one 1s wait", n, waited)
	}
}

func TestRunRepostsPendingAndPolls(t *testing.T) {
	dec := &chattest.Decider{PendingDecisions: []decision.Decision{chattest.PlanDecision(), chattest.LockDecision()}}
	b, f := newTestBot(t, dec, config.TelegramModePolling)
	if err := b.Notify(context.Background(), chattest.Opened(chattest.PlanDecision())); err != nil {
		t.Fatal(err)
	}
	run(t, b)
	lock := chattest.LockDecision()
	chattest.WaitFor(t, "the re-post", func() bool { return messageOf(t, b, lock.ID) != 0 })
	if n := len(f.Calls("getMe")); n != 1 {
		t.Errorf("getMe called %d times, want 1", n)
	}
	sent := f.Calls("sendMessage")
	if len(sent) != 2 || !strings.Contains(sent[1].Form["text"], "T-2026-002") {
		t.Fatalf("got %d messages, the last %q; want the lock decision re-posted once", len(sent), sent[len(sent)-1].Form["text"])
	}
	// The polling loop is live: a click on the re-posted message arrives.
	f.Push(callbackUpdate(42, "Ana", tokensOf(t, b, lock)[0], messageOf(t, b, lock.ID)))
	chattest.WaitFor(t, "the answer", func() bool { return len(f.Calls("answerCallbackQuery")) == 1 })
	if in := dec.Inputs(); len(in) != 1 || in[0].Option != task.OptRedispatch {
		t.Errorf("Decide got %+v", in)
	}
}
