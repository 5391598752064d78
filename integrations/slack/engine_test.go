package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// press clicks token as user and waits for the work the click started.
func press(t *testing.T, b *Bot, user, token, actionTS string) {
	t.Helper()
	if w := serve(b, signedRequest(clickPayload(user, token, actionTS), testSecret, time.Now())); w.Code != http.StatusOK {
		t.Fatalf("status %d, want 200", w.Code)
	}
	b.work.Wait()
}

// buttonValues returns the button tokens a post or edit carries.
func buttonValues(t *testing.T, c apiCall) []string {
	t.Helper()
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Value string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(c.Form["blocks"]), &blocks); err != nil {
		t.Fatalf("%s sent unreadable blocks: %v", c.Method, err)
	}
	var out []string
	for _, b := range blocks {
		if b.Type == "actions" {
			for _, e := range b.Elements {
				out = append(out, e.Value)
			}
		}
	}
	return out
}

// quorumBot posts a decision that needs two approvals.
func quorumBot(t *testing.T) (*Bot, *fakeSlack, *chattest.Decider, decision.Decision, []string) {
	t.Helper()
	d := chattest.QuorumDecision()
	dec := &chattest.Decider{PendingDecisions: []decision.Decision{d}}
	b, f, tokens := postedBot(t, dec, d)
	return b, f, dec, d, tokens
}

// TestClickAnswersWithDigestAndSubject: a click answers the decision as
// its button showed it.
func TestClickAnswersWithDigestAndSubject(t *testing.T) {
	d := chattest.QuorumDecision()
	d.Required = 1
	dec := &chattest.Decider{PendingDecisions: []decision.Decision{d}}
	b, f, tokens := postedBot(t, dec, d)
	press(t, b, "U1", tokens[0], "1.1")
	want := decision.Answer{DecisionID: d.ID, Option: decision.OptApprove, Digest: chattest.Digest, By: "slack:U1", Channel: "slack"}
	if in := dec.Inputs(); len(in) != 1 || in[0] != want {
		t.Fatalf("Decide got %+v, want [%+v]", in, want)
	}
	if n := len(f.Calls("chat.update")); n != 1 {
		t.Errorf("%d edits, want the message closed once", n)
	}
}

// TestQuorumClickShowsProgress: an approval short of the quorum edits the
// message to the progress and keeps the buttons; the second admin's
// approval closes it.
func TestQuorumClickShowsProgress(t *testing.T) {
	b, f, dec, d, tokens := quorumBot(t)
	press(t, b, "U1", tokens[0], "1.1")
	edits := f.Calls("chat.update")
	if len(edits) != 1 {
		t.Fatalf("%d edits after the first approval, want 1", len(edits))
	}
	if blocks := blocksOf(t, edits[0]); !strings.Contains(blocks, "1 of 2 approvals: slack:U1") {
		t.Errorf("the edit does not show the progress: %s", blocks)
	}
	if got := buttonValues(t, edits[0]); strings.Join(got, ",") != strings.Join(tokens, ",") {
		t.Errorf("the edit carries buttons %v, want the posted ones %v", got, tokens)
	}
	if len(dec.Decisions()) != 0 || len(f.Calls("chat.postEphemeral")) != 0 {
		t.Fatalf("one approval of two decided %v or was refused", dec.Decisions())
	}

	// The same admin again counts once.
	press(t, b, "U1", tokens[0], "1.2")
	if len(dec.Decisions()) != 0 {
		t.Fatal("the same admin's second approval reached the quorum")
	}

	press(t, b, "U2", tokens[0], "1.3")
	o, ok := dec.Decisions()[d.ID]
	if !ok || len(o.Approvers) != 2 {
		t.Fatalf("outcome %+v, want a decision with two approvers", o)
	}
	edits = f.Calls("chat.update")
	last := edits[len(edits)-1]
	if blocks := blocksOf(t, last); len(buttonValues(t, last)) != 0 || !strings.Contains(blocks, "<@U2>") {
		t.Errorf("the closing edit keeps buttons or does not name the decider: %s", blocks)
	}
}

// TestProgressNoticeEditsMessage: an approval given on another channel
// shows here too, buttons kept.
func TestProgressNoticeEditsMessage(t *testing.T) {
	b, f, _, d, tokens := quorumBot(t)
	d.Approvals = []decision.Approval{{By: "telegram:42", Channel: "telegram", At: chattest.RaisedAt.Add(time.Minute)}}
	if err := b.Notify(context.Background(), chattest.Notice(notify.DecisionProgress, d)); err != nil {
		t.Fatal(err)
	}
	edits := f.Calls("chat.update")
	if len(edits) != 1 || !strings.Contains(blocksOf(t, edits[0]), "1 of 2 approvals: telegram:42") {
		t.Fatalf("edits %v, want one showing 1 of 2 approvals: telegram:42", edits)
	}
	if got := buttonValues(t, edits[0]); strings.Join(got, ",") != strings.Join(tokens, ",") {
		t.Errorf("the edit carries buttons %v, want %v", got, tokens)
	}
}

// TestProgressKeepsReminderMark: a progress edit of a reminder still
// reads as a reminder.
func TestProgressKeepsReminderMark(t *testing.T) {
	b, f, _, d, _ := quorumBot(t)
	d.RemindedAt = chattest.RaisedAt.Add(time.Hour)
	if err := b.Notify(context.Background(), chattest.Notice(notify.DecisionReminder, d)); err != nil {
		t.Fatal(err)
	}
	d.Approvals = []decision.Approval{{By: "slack:U1", Channel: "slack", At: d.RemindedAt.Add(time.Minute)}}
	if err := b.Notify(context.Background(), chattest.Notice(notify.DecisionProgress, d)); err != nil {
		t.Fatal(err)
	}
	edits := f.Calls("chat.update")
	if len(edits) != 2 {
		t.Fatalf("%d edits, want both copies", len(edits))
	}
	for _, e := range edits {
		// The fake numbers its answers: the reminder was the second.
		reminder := e.Form["ts"] == "1772366400.000002"
		if got := strings.Contains(blocksOf(t, e), "Reminder"); got != reminder {
			t.Errorf("edit of %s reads as a reminder: %v, want %v", e.Form["ts"], got, reminder)
		}
		if !strings.Contains(blocksOf(t, e), "1 of 2 approvals: slack:U1") {
			t.Errorf("edit of %s lacks the progress", e.Form["ts"])
		}
	}
}

// TestReminderPostsAgain: a reminder is a new message, marked, whose
// buttons decide; a retried notice posts nothing more.
func TestReminderPostsAgain(t *testing.T) {
	b, f, dec, d, _ := quorumBot(t)
	d.Required = 1
	dec.Change(d)
	d.RemindedAt = chattest.RaisedAt.Add(time.Hour)
	for range 2 {
		if err := b.Notify(context.Background(), chattest.Notice(notify.DecisionReminder, d)); err != nil {
			t.Fatal(err)
		}
	}
	posts := f.Calls("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("%d posts, want the decision and one reminder", len(posts))
	}
	if blocks := blocksOf(t, posts[1]); !strings.Contains(blocks, "Reminder") || !strings.HasPrefix(posts[1].Form["text"], "Reminder:") {
		t.Errorf("the reminder is not marked: %s", blocks)
	}
	tokens := buttonValues(t, posts[1])
	if len(tokens) != 2 {
		t.Fatalf("the reminder has buttons %v, want 2", tokens)
	}
	press(t, b, "U2", tokens[0], "2.1")
	if o, ok := dec.Decisions()[d.ID]; !ok || o.By != "slack:U2" {
		t.Fatalf("decisions %v, want one by slack:U2 from the reminder", dec.Decisions())
	}
	// Both copies close.
	if n := len(f.Calls("chat.update")); n != 2 {
		t.Errorf("%d edits, want both copies closed", n)
	}
}

// TestEscalationCallsGroup: an escalation posts again mentioning the
// escalation group, who may decide from then on and not before.
func TestEscalationCallsGroup(t *testing.T) {
	b, f, dec, d, tokens := quorumBot(t)
	b.core.Escalation = []string{"U9"}
	press(t, b, "U9", tokens[1], "3.1")
	if len(dec.Inputs()) != 0 || len(f.Calls("chat.postEphemeral")) != 1 {
		t.Fatalf("a member of the escalation group decided before the escalation: %+v", dec.Inputs())
	}
	d.EscalatedAt = chattest.RaisedAt.Add(4 * time.Hour)
	for range 2 {
		if err := b.Notify(context.Background(), chattest.Notice(notify.DecisionEscalated, d)); err != nil {
			t.Fatal(err)
		}
	}
	posts := f.Calls("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("%d posts, want the decision and one escalation", len(posts))
	}
	if blocks := blocksOf(t, posts[1]); !strings.Contains(blocks, "Escalated") || !strings.Contains(blocks, "<@U9>") ||
		!strings.Contains(posts[1].Form["text"], "<@U9>") {
		t.Errorf("the escalation does not call U9: %s", blocks)
	}
	esc := buttonValues(t, posts[1])
	press(t, b, "U9", esc[0], "3.2")
	if in := dec.Inputs(); len(in) != 1 || in[0].By != "slack:U9" {
		t.Errorf("Decide got %+v, want an approval by slack:U9", in)
	}
}

// TestStaleClickPostsCurrent: a click on a decision whose digest changed
// records nothing, says so, and posts the decision as it stands; its
// buttons then decide.
func TestStaleClickPostsCurrent(t *testing.T) {
	b, f, dec, d, tokens := quorumBot(t)
	now := d
	now.Digest, now.Required, now.Prompt = chattest.Digest2, 1, "Approve the plan of 3 subtasks?"
	dec.Change(now)
	press(t, b, "U1", tokens[0], "4.1")
	if in := dec.Inputs(); len(in) != 1 || in[0].Digest != chattest.Digest || len(dec.Decisions()) != 0 {
		t.Fatalf("Decide got %+v, decided %v; want one refused answer with the old digest", in, dec.Decisions())
	}
	told := f.Calls("chat.postEphemeral")
	if len(told) != 1 || !strings.Contains(told[0].Form["text"], "changed") || !strings.Contains(told[0].Form["text"], d.ID) {
		t.Fatalf("told %v, want that the decision changed and where the current one is", told)
	}
	posts := f.Calls("chat.postMessage")
	if len(posts) != 2 || !strings.Contains(blocksOf(t, posts[1]), "3 subtasks") {
		t.Fatalf("%d posts, want the current decision posted", len(posts))
	}
	press(t, b, "U1", buttonValues(t, posts[1])[0], "4.2")
	if o, ok := dec.Decisions()[d.ID]; !ok || o.Digest != chattest.Digest2 {
		t.Errorf("decisions %v, want one on the current digest", dec.Decisions())
	}
}

// TestExpiryClosesMessage: an expiry closes the message like any outcome
// and says nobody answered.
func TestExpiryClosesMessage(t *testing.T) {
	b, f, _, d, _ := quorumBot(t)
	o := chattest.Outcome(d, decision.OptReject, decision.By, decision.ChannelExpiry, "")
	if err := b.Notify(context.Background(), chattest.Closed(d, o)); err != nil {
		t.Fatal(err)
	}
	edits := f.Calls("chat.update")
	if len(edits) != 1 || len(buttonValues(t, edits[0])) != 0 || !strings.Contains(blocksOf(t, edits[0]), "Expired") {
		t.Fatalf("edits %v, want the message closed as expired", edits)
	}
}
