package telegram

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-telegram/bot/models"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// deliver sends an update to the webhook handler as Telegram would.
func deliver(b *Bot, update, secret string) int {
	r := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(update))
	r.Header.Set("Content-Type", "application/json")
	if secret != "" {
		r.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	w := httptest.NewRecorder()
	b.Handler().ServeHTTP(w, r)
	return w.Code
}

// webhookBot returns a running webhook-mode bot with d posted.
func webhookBot(t *testing.T, dec *chattest.Decider, d decision.Decision) (*Bot, *fakeTelegram, []string, int) {
	t.Helper()
	b, f := newTestBot(t, dec, config.TelegramModeWebhook)
	if err := b.Notify(context.Background(), chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	run(t, b)
	return b, f, tokensOf(t, b, d), messageOf(t, b, d.ID)
}

func answers(f *fakeTelegram) []apiCall { return f.Calls("answerCallbackQuery") }

func TestCallbackByAdminDecides(t *testing.T) {
	dec := &chattest.Decider{}
	d := chattest.PlanDecision()
	b, f, tokens, msg := webhookBot(t, dec, d)
	if code := deliver(b, withUpdateID(callbackUpdate(42, "Ana", tokens[0], msg)), testSecret); code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	chattest.WaitFor(t, "the answer", func() bool { return len(answers(f)) == 1 })
	want := decision.Answer{DecisionID: d.ID, Option: decision.OptApprove, By: "telegram:42", Channel: "telegram"}
	if in := dec.Inputs(); len(in) != 1 || in[0] != want {
		t.Fatalf("Decide got %+v, want [%+v]", in, want)
	}
	a := answers(f)[0]
	if a.Form["callback_query_id"] != "cq-42-"+tokens[0] || !strings.Contains(a.Form["text"], "Recorded: Approve") || a.Form["show_alert"] == "true" {
		t.Errorf("answer %v", a.Form)
	}
	edits := f.Calls("editMessageText")
	if len(edits) != 1 || !strings.Contains(edits[0].Form["text"], "telegram:42") {
		t.Fatalf("edits %v, want one naming the admin", edits)
	}
	if kb := keyboard(t, edits[0]); len(kb.InlineKeyboard) != 0 {
		t.Error("the edit keeps the buttons")
	}
}

func TestCallbackByNonAdminRefused(t *testing.T) {
	dec := &chattest.Decider{}
	b, f, tokens, msg := webhookBot(t, dec, chattest.PlanDecision())
	deliver(b, withUpdateID(callbackUpdate(666, "Eve", tokens[0], msg)), testSecret)
	chattest.WaitFor(t, "the answer", func() bool { return len(answers(f)) == 1 })
	a := answers(f)[0]
	if a.Form["show_alert"] != "true" || !strings.Contains(a.Form["text"], "Only ampflow admins") || !strings.Contains(a.Form["text"], "666") {
		t.Errorf("refusal answer %v, want an alert naming the user id", a.Form)
	}
	if in := dec.Inputs(); len(in) != 0 {
		t.Errorf("a non-admin's click reached the workflow: %+v", in)
	}
	if n := len(f.Calls("editMessageText")); n != 0 {
		t.Errorf("a refused click edited the message %d times", n)
	}
}

func TestDoubleClickMakesOneDecision(t *testing.T) {
	dec := &chattest.Decider{}
	d := chattest.PlanDecision()
	b, f, tokens, msg := webhookBot(t, dec, d)
	var wg sync.WaitGroup
	for _, user := range []int64{42, 43} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deliver(b, withUpdateID(callbackUpdate(user, "A", tokens[0], msg)), testSecret)
		}()
	}
	wg.Wait()
	chattest.WaitFor(t, "both answers", func() bool { return len(answers(f)) == 2 })
	if n := len(dec.Decisions()); n != 1 {
		t.Fatalf("%d decisions taken, want 1", n)
	}
	winner := dec.Decisions()[d.ID].By
	var told int
	for _, a := range answers(f) {
		if strings.Contains(strings.ToLower(a.Form["text"]), "already decided") && strings.Contains(a.Form["text"], winner) {
			told++
			if a.Form["show_alert"] != "true" {
				t.Error("the loser's answer is not an alert")
			}
		}
	}
	if told != 1 {
		t.Errorf("%d clickers told already decided by %s, want 1: %v", told, winner, answers(f))
	}
	if n := len(f.Calls("editMessageText")); n != 1 {
		t.Errorf("got %d edits, want 1", n)
	}
}

func TestNoteByForceReply(t *testing.T) {
	dec := &chattest.Decider{}
	d := chattest.PlanDecision()
	b, f, tokens, msg := webhookBot(t, dec, d)
	deliver(b, withUpdateID(callbackUpdate(42, "Ana", tokens[1], msg)), testSecret)
	chattest.WaitFor(t, "the answer", func() bool { return len(answers(f)) == 1 })
	if !strings.Contains(answers(f)[0].Form["text"], "Reply") {
		t.Errorf("answer %q does not ask for a reply", answers(f)[0].Form["text"])
	}
	sent := f.Calls("sendMessage")
	prompt := sent[len(sent)-1]
	var force models.ForceReply
	if err := json.Unmarshal([]byte(prompt.Form["reply_markup"]), &force); err != nil || !force.ForceReply || !force.Selective {
		t.Fatalf("prompt markup %q, want a selective force_reply", prompt.Form["reply_markup"])
	}
	if !strings.Contains(prompt.Form["text"], "tg://user?id=42") {
		t.Errorf("prompt %q does not mention the admin", prompt.Form["text"])
	}
	if len(dec.Inputs()) != 0 {
		t.Fatal("decided before the note")
	}
	promptID, _ := strconv.Atoi(prompt.NewID)
	if _, ok, err := b.core.Note(context.Background(), noteKey(testChat, promptID)); err != nil || !ok {
		t.Fatal("no note request recorded")
	}

	// Another admin's reply does not count, nor does an empty one.
	deliver(b, withUpdateID(replyUpdate(43, "me too", promptID)), testSecret)
	deliver(b, withUpdateID(replyUpdate(42, "   ", promptID)), testSecret)
	chattest.WaitFor(t, "the empty note refused", func() bool { return len(f.Calls("sendMessage")) == len(sent)+1 })
	deliver(b, withUpdateID(replyUpdate(42, "Scope too wide", promptID)), testSecret)
	chattest.WaitFor(t, "the decision", func() bool { return len(dec.Inputs()) == 1 })
	want := decision.Answer{DecisionID: d.ID, Option: decision.OptReject, Note: "Scope too wide", By: "telegram:42", Channel: "telegram"}
	if got := dec.Inputs()[0]; got != want {
		t.Errorf("Decide got %+v, want %+v", got, want)
	}
	chattest.WaitFor(t, "the edit", func() bool { return len(f.Calls("editMessageText")) == 1 })
	if !strings.Contains(f.Calls("editMessageText")[0].Form["text"], "Scope too wide") {
		t.Error("the edit does not show the note")
	}
	chattest.WaitFor(t, "the confirmation", func() bool { return len(f.Calls("sendMessage")) == len(sent)+2 })
	last := f.Calls("sendMessage")[len(sent)+1]
	if !strings.Contains(last.Form["text"], "Recorded: Reject") {
		t.Errorf("confirmation %q", last.Form["text"])
	}
}

func TestWebhookSecretChecked(t *testing.T) {
	dec := &chattest.Decider{}
	b, f, tokens, msg := webhookBot(t, dec, chattest.PlanDecision())
	update := withUpdateID(callbackUpdate(42, "Ana", tokens[0], msg))
	for _, secret := range []string{"", "wrong", testSecret + "x", strings.ToUpper(testSecret)} {
		if code := deliver(b, update, secret); code != http.StatusUnauthorized {
			t.Errorf("secret %q: status %d, want 401", secret, code)
		}
	}
	// Redelivered with the right secret: taken once.
	for range 2 {
		if code := deliver(b, update, testSecret); code != http.StatusOK {
			t.Fatalf("status %d, want 200", code)
		}
	}
	chattest.WaitFor(t, "the answer", func() bool { return len(answers(f)) == 1 })
	chattest.WaitFor(t, "the redelivery dropped", func() bool { return logged(b, "update redelivered") })
	if in := dec.Inputs(); len(in) != 1 || len(answers(f)) != 1 {
		t.Errorf("Decide called %d times and %d answers, want 1 and 1", len(in), len(answers(f)))
	}
	if logged(b, testSecret) {
		t.Error("the webhook secret was logged")
	}
}
