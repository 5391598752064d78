package slack

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/chat"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// tokensOf returns the button tokens of a posted decision in option order.
func tokensOf(t *testing.T, b *Bot, d decision.Decision) []string {
	t.Helper()
	buttons, err := b.core.State.Buttons(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	return chattest.Tokens(buttons, d)
}

// postedOf returns what b's state holds of the decision id; ok is false
// when it holds nothing.
func postedOf(t *testing.T, st chat.Posts[msgRef], id string) (posted, bool) {
	t.Helper()
	p, ok, err := st.Posted(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p, ok
}

func TestNotifyPostsDecision(t *testing.T) {
	db := chattest.SSOT(t)
	b, f := newTestBotOn(t, &chattest.Decider{}, db)
	d := chattest.PlanDecision()
	if err := b.Notify(context.Background(), chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	posts := f.Calls("chat.postMessage")
	if len(posts) != 1 {
		t.Fatalf("got %d posts, want 1", len(posts))
	}
	if got := posts[0].Form["channel"]; got != "#ampflow" {
		t.Errorf("posted to %q, want the configured channel", got)
	}
	tokens := tokensOf(t, b, d)
	for i, tok := range tokens {
		if tok == "" {
			t.Fatalf("option %s has no token in the state", d.Options[i].ID)
		}
	}
	var rendered any
	if err := json.Unmarshal(jsonText(t, RenderDecision(d, tokens), ""), &rendered); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(jsonText(t, rendered, "")))
	if got := blocksOf(t, posts[0]); got != want {
		t.Errorf("posted blocks differ from the rendering:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(posts[0].Form["text"], "T-2026-001") {
		t.Errorf("fallback text %q does not name the task", posts[0].Form["text"])
	}

	// The state survives a restart: a new bot on the same SSOT knows the post.
	again := chat.NewSQLState[msgRef](db, Channel, nil)
	if p, ok := postedOf(t, again, d.ID); !ok || len(p.Messages) != 1 || p.Messages[0].TS == "" {
		t.Errorf("the state lacks the posted message: %+v", p)
	}
}

func TestNotifyIdempotent(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{})
	ctx := context.Background()
	esc := notify.Input{TaskID: "T-2026-002", Event: notify.Escalation, Message: chattest.LockDecision().Escalation}
	status := notify.Input{TaskID: "T-2026-002", Event: notify.Status, Status: task.StatusInReview}
	for range 3 {
		for _, in := range []notify.Input{chattest.Opened(chattest.PlanDecision()), esc, status} {
			if err := b.Notify(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
	}
	posts := f.Calls("chat.postMessage")
	if len(posts) != 3 {
		t.Fatalf("got %d posts for 3 notices each sent 3 times, want 3", len(posts))
	}
	if blocks := blocksOf(t, posts[1]); strings.Contains(blocks, `"actions"`) || !strings.Contains(blocks, "hallucination_lock") {
		t.Errorf("escalation post has buttons or lacks its type: %s", blocks)
	}
	if text := posts[2].Form["text"]; !strings.Contains(text, "in review") {
		t.Errorf("status post = %q", text)
	}
}

func TestNotifyClosedEditsOnce(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{})
	ctx := context.Background()
	d := chattest.LockDecision()
	if err := b.Notify(ctx, chattest.Opened(d)); err != nil {
		t.Fatal(err)
	}
	o := chattest.Outcome(d, task.OptTerminate, "telegram:42", "telegram", "")
	for range 2 {
		if err := b.Notify(ctx, chattest.Closed(d, o)); err != nil {
			t.Fatal(err)
		}
	}
	ups := f.Calls("chat.update")
	if len(ups) != 1 {
		t.Fatalf("got %d edits, want 1", len(ups))
	}
	if ups[0].Form["ts"] == "" || ups[0].Form["channel"] != "C0DEC" {
		t.Errorf("edit targets %s/%s, want the posted message in C0DEC", ups[0].Form["channel"], ups[0].Form["ts"])
	}
	blocks := blocksOf(t, ups[0])
	if strings.Contains(blocks, `"type":"actions"`) {
		t.Error("edited message still has buttons")
	}
	for _, want := range []string{"Terminate", "telegram:42", "via telegram", "2026-03-01 12:04 UTC"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("edited message lacks %q", want)
		}
	}
}

func TestNotifyClosedNotPostedHere(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{})
	d := chattest.PlanDecision()
	if err := b.Notify(context.Background(), chattest.Closed(d, chattest.Outcome(d, decision.OptApprove, "cli", "cli", ""))); err != nil {
		t.Fatal(err)
	}
	if n := len(f.All()); n != 0 {
		t.Errorf("closing an unposted decision made %d calls", n)
	}
}

func TestRateLimitRetriedAfterRetryAfter(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{})
	f.Limit("chat.postMessage", 1)
	if err := b.Notify(context.Background(), chattest.Opened(chattest.PlanDecision())); err != nil {
		t.Fatal(err)
	}
	posts := f.Calls("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("got %d attempts, want 2", len(posts))
	}
	if gap := posts[1].At.Sub(posts[0].At); gap < time.Second {
		t.Errorf("retried after %v, want at least the 1s Retry-After", gap)
	}
	if len(tokensOf(t, b, chattest.PlanDecision())) != 2 {
		t.Error("decision not recorded after the retry")
	}
}

func TestRateLimitBounded(t *testing.T) {
	b, f := newTestBot(t, &chattest.Decider{})
	b.maxRetries = 2
	var waited []time.Duration
	b.sleep = func(_ context.Context, d time.Duration) error { waited = append(waited, d); return nil }
	f.Limit("chat.postMessage", 10)
	err := b.Notify(context.Background(), chattest.Opened(chattest.PlanDecision()))
	if err == nil {
		t.Fatal("Notify succeeded through a lasting rate limit")
	}
	if n := len(f.Calls("chat.postMessage")); n != 3 {
		t.Errorf("got %d attempts, want 3 (1 + 2 retries)", n)
	}
	if len(waited) != 2 || waited[0] != time.Second {
		t.Errorf("waited %v, want two waits of 1s", waited)
	}
	if _, ok := postedOf(t, b.core.State, chattest.PlanDecision().ID); ok {
		t.Error("a failed post was recorded as posted")
	}
}

func TestRunRepostsPending(t *testing.T) {
	dec := &chattest.Decider{PendingDecisions: []decision.Decision{chattest.PlanDecision(), chattest.LockDecision()}}
	b, f := newTestBot(t, dec)
	if err := b.Notify(context.Background(), chattest.Opened(chattest.PlanDecision())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	chattest.WaitFor(t, "the re-post", func() bool { return len(f.Calls("chat.postMessage")) >= 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	posts := f.Calls("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("got %d posts, want 2 (the plan once, the lock re-posted)", len(posts))
	}
	if !strings.Contains(posts[1].Form["text"], "T-2026-002") {
		t.Errorf("re-posted %q, want the lock decision", posts[1].Form["text"])
	}
	var blocks []map[string]any
	if err := json.Unmarshal([]byte(blocksOf(t, posts[1])), &blocks); err != nil || len(blocks) == 0 {
		t.Errorf("re-post blocks unreadable: %v", err)
	}
}
