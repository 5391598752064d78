package slack

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/activities/ssot/ssottest"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// ssotBot is a bot of one worker posting to f, its state in the SSOT at
// url, which it opens itself as a worker does.
func ssotBot(t *testing.T, f *fakeSlack, dec Decider, url string) *Bot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := ssot.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := config.Slack{Enabled: true, Mode: config.SlackModeHTTP, BotToken: testToken, SigningSecret: testSecret,
		Channel: "#ampflow", Admins: []string{"U1", "U2"}, APIURL: f.URL() + "/api"}
	b, err := New(cfg, dec, slog.New(slog.NewTextHandler(io.Discard, nil)), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.work.Wait)
	return b
}

// TestSSOTReminderAndProgress: on the SSOT, two workers post a decision
// and its reminder once; an approval clicked at one worker edits both
// copies to the quorum's progress, the reminder still marked, buttons
// kept; the closing approval at the other worker closes both.
func TestSSOTReminderAndProgress(t *testing.T) {
	for _, e := range ssottest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			f, url := newFakeSlack(t), e.URL(t)
			d := chattest.QuorumDecision()
			dec := &chattest.Decider{PendingDecisions: []decision.Decision{d}}
			w1, w2 := ssotBot(t, f, dec, url), ssotBot(t, f, dec, url)

			for _, b := range []*Bot{w1, w2} {
				if err := b.Notify(ctx, chattest.Opened(d)); err != nil {
					t.Fatal(err)
				}
			}
			d.RemindedAt = chattest.RaisedAt.Add(time.Hour)
			for _, b := range []*Bot{w2, w1} {
				if err := b.Notify(ctx, chattest.Notice(notify.DecisionReminder, d)); err != nil {
					t.Fatal(err)
				}
			}
			posts := f.Calls("chat.postMessage")
			if len(posts) != 2 {
				t.Fatalf("%d posts, want the decision and one reminder across both workers", len(posts))
			}
			if blocks := blocksOf(t, posts[1]); !strings.Contains(blocks, "Reminder") || strings.Contains(blocksOf(t, posts[0]), "Reminder") {
				t.Fatalf("the second post is not the only reminder: %s", blocks)
			}
			tokens := buttonValues(t, posts[1])
			if len(tokens) != 2 || strings.Join(tokens, ",") != strings.Join(buttonValues(t, posts[0]), ",") {
				t.Fatalf("the reminder carries buttons %v, want the decision's %v", tokens, buttonValues(t, posts[0]))
			}

			// U1 approves on the reminder at w1: one of two.
			press(t, w1, "U1", tokens[0], "1.1")
			if len(dec.Decisions()) != 0 {
				t.Fatalf("one approval of two decided %v", dec.Decisions())
			}
			edits := f.Calls("chat.update")
			if len(edits) != 2 {
				t.Fatalf("%d edits, want both copies showing the progress", len(edits))
			}
			for _, ed := range edits {
				blocks := blocksOf(t, ed)
				// The fake numbers its answers: the reminder was the second.
				reminder := ed.Form["ts"] == "1772366400.000002"
				if !strings.Contains(blocks, "1 of 2 approvals: slack:U1") || strings.Contains(blocks, "Reminder") != reminder {
					t.Errorf("edit of %s (reminder %v) reads: %s", ed.Form["ts"], reminder, blocks)
				}
				if got := buttonValues(t, ed); strings.Join(got, ",") != strings.Join(tokens, ",") {
					t.Errorf("edit of %s carries buttons %v, want %v", ed.Form["ts"], got, tokens)
				}
			}

			// U2 approves on the first post at w2, which posted neither: closed.
			press(t, w2, "U2", buttonValues(t, posts[0])[0], "1.2")
			o, ok := dec.Decisions()[d.ID]
			if !ok || len(o.Approvers) != 2 {
				t.Fatalf("outcome %+v, want a decision with two approvers", o)
			}
			edits = f.Calls("chat.update")
			if len(edits) != 4 {
				t.Fatalf("%d edits, want both copies closed after their progress", len(edits))
			}
			for _, ed := range edits[2:] {
				if len(buttonValues(t, ed)) != 0 || !strings.Contains(blocksOf(t, ed), "<@U2>") {
					t.Errorf("closing edit of %s keeps buttons or does not name the decider: %s", ed.Form["ts"], blocksOf(t, ed))
				}
			}
			// The workflow's closing notice, at w1, finds both closed.
			if err := w1.Notify(ctx, chattest.Closed(d, o)); err != nil {
				t.Fatal(err)
			}
			if n := len(f.Calls("chat.update")); n != 4 {
				t.Errorf("%d edits after the closing notice, want still 4", n)
			}
		})
	}
}
