package telegram

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// click presses token as userID on message msg and returns the answer
// to the callback query.
func click(t *testing.T, b *Bot, f *fakeTelegram, userID int64, token string, msg int) apiCall {
	t.Helper()
	n := len(answers(f))
	if code := deliver(b, withUpdateID(callbackUpdate(userID, "A", token, msg)), testSecret); code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	chattest.WaitFor(t, "the answer", func() bool { return len(answers(f)) > n })
	return answers(f)[n]
}

// buttons returns the callback data of a message's keyboard.
func buttons(t *testing.T, c apiCall) []string {
	t.Helper()
	var out []string
	for _, row := range keyboard(t, c).InlineKeyboard {
		for _, btn := range row {
			out = append(out, btn.CallbackData)
		}
	}
	return out
}

// TestQuorumCallbackShowsProgress: an approval short of the quorum tells
// the admin, edits the message to the progress and keeps the buttons.
func TestQuorumCallbackShowsProgress(t *testing.T) {
	d := chattest.QuorumDecision()
	dec := &chattest.Decider{PendingDecisions: []decision.Decision{d}}
	b, f, tokens, msg := webhookBot(t, dec, d)
	a := click(t, b, f, 42, tokens[0], msg)
	if !strings.Contains(a.Form["text"], "1 of 2 approvals: telegram:42") || a.Form["show_alert"] == "true" {
		t.Errorf("answer %v, want the progress", a.Form)
	}
	if in := dec.Inputs(); len(in) != 1 || in[0].Digest != chattest.Digest || in[0].DecisionID != d.ID {
		t.Errorf("Decide got %+v, want the posted digest", in)
	}
	edits := f.Calls("editMessageText")
	if len(edits) != 1 || !strings.Contains(edits[0].Form["text"], "1 of 2 approvals: telegram:42") {
		t.Fatalf("edits %v, want one showing the progress", edits)
	}
	if got := buttons(t, edits[0]); strings.Join(got, ",") != strings.Join(tokens, ",") {
		t.Errorf("the edit carries buttons %v, want %v", got, tokens)
	}
	a = click(t, b, f, 43, tokens[0], msg)
	if o, ok := dec.Decisions()[d.ID]; !ok || len(o.Approvers) != 2 || !strings.Contains(a.Form["text"], "Recorded") {
		t.Errorf("outcome %+v, answer %v; want a decision by two approvers", o, a.Form)
	}
}

// TestRemindersAndEscalationPostAgain: a reminder and an escalation are
// new messages with working buttons; the escalation mentions the group.
func TestRemindersAndEscalationPostAgain(t *testing.T) {
	d := chattest.QuorumDecision()
	d.Required = 1
	dec := &chattest.Decider{PendingDecisions: []decision.Decision{d}}
	b, f, _, _ := webhookBot(t, dec, d)
	b.core.Escalation = []string{"44"}
	d.RemindedAt = chattest.RaisedAt.Add(time.Hour)
	if err := b.Notify(context.Background(), chattest.Notice(notify.DecisionReminder, d)); err != nil {
		t.Fatal(err)
	}
	d.EscalatedAt = chattest.RaisedAt.Add(4 * time.Hour)
	if err := b.Notify(context.Background(), chattest.Notice(notify.DecisionEscalated, d)); err != nil {
		t.Fatal(err)
	}
	sent := f.Calls("sendMessage")
	if len(sent) != 3 {
		t.Fatalf("%d messages, want the decision, a reminder and an escalation", len(sent))
	}
	if !strings.Contains(sent[1].Form["text"], "Reminder") || len(buttons(t, sent[1])) != 2 {
		t.Errorf("reminder %q lacks its mark or buttons", sent[1].Form["text"])
	}
	if !strings.Contains(sent[2].Form["text"], "Escalated") || !strings.Contains(sent[2].Form["text"], `tg://user?id=44`) {
		t.Errorf("escalation %q does not call 44", sent[2].Form["text"])
	}
	// The escalation group may decide now, from the escalation's buttons.
	a := click(t, b, f, 44, buttons(t, sent[2])[0], 103)
	if o, ok := dec.Decisions()[d.ID]; !ok || o.By != "telegram:44" {
		t.Fatalf("decisions %v (answer %v), want one by telegram:44", dec.Decisions(), a.Form)
	}
	if n := len(f.Calls("editMessageText")); n != 3 {
		t.Errorf("%d edits, want all three copies closed", n)
	}
}

// TestStaleCallbackPostsCurrent: a click with a digest no longer current
// is refused in an alert, and the decision is posted as it stands.
func TestStaleCallbackPostsCurrent(t *testing.T) {
	d := chattest.QuorumDecision()
	dec := &chattest.Decider{PendingDecisions: []decision.Decision{d}}
	b, f, tokens, msg := webhookBot(t, dec, d)
	now := d
	now.Digest, now.Prompt = chattest.Digest2, "Approve the plan of 3 subtasks?"
	dec.Change(now)
	a := click(t, b, f, 42, tokens[0], msg)
	if a.Form["show_alert"] != "true" || !strings.Contains(a.Form["text"], "changed") {
		t.Errorf("answer %v, want an alert that the decision changed", a.Form)
	}
	sent := f.Calls("sendMessage")
	if len(sent) != 2 || !strings.Contains(sent[1].Form["text"], "3 subtasks") {
		t.Fatalf("%d messages, want the current decision posted", len(sent))
	}
	if len(dec.Decisions()) != 0 {
		t.Errorf("a stale click decided: %v", dec.Decisions())
	}
}
