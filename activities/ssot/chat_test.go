package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

var chatNow = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func TestChatPostAndButtonAcrossHandles(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		other := openStore(t, u) // a second worker on the same database
		p := ChatPost{Platform: "slack", DecisionID: "T-1-d1", Subject: "T-1", Decision: json.RawMessage(`{"id":"T-1-d1"}`),
			Messages: json.RawMessage(`[{"ts":"1.2"}]`), PostedAt: chatNow}
		btns := []ChatButton{
			{Token: "tokA", Platform: "slack", DecisionID: "T-1-d1", Subject: "T-1", Digest: "ab12", Option: "approve", CreatedAt: chatNow},
			{Token: "tokB", Platform: "slack", DecisionID: "T-1-d1", Subject: "T-1", Digest: "ab12", Option: "reject", CreatedAt: chatNow},
		}
		if err := s.PutChatPost(ctx, p, btns); err != nil {
			t.Fatal(err)
		}
		b, got, err := other.ChatButton(ctx, "slack", "tokB")
		if err != nil {
			t.Fatalf("token written by one handle, read through another: %v", err)
		}
		if b.Option != "reject" || b.Digest != "ab12" || b.Subject != "T-1" || got.DecisionID != "T-1-d1" || string(got.Messages) != `[{"ts":"1.2"}]` || !got.PostedAt.Equal(chatNow) {
			t.Fatalf("button %+v, post %+v", b, got)
		}
		if got.Outcome != nil || !got.ClosedAt.IsZero() {
			t.Fatalf("open post has outcome %s, closed at %v", got.Outcome, got.ClosedAt)
		}
		// A token of one platform is unknown to another.
		if _, _, err := other.ChatButton(ctx, "telegram", "tokB"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("slack token looked up for telegram: %v, want not found", err)
		}
		// The same token again for the same option is a retry; for another
		// option it is refused and nothing of the call is written.
		if err := s.PutChatPost(ctx, p, btns[:1]); err != nil {
			t.Fatalf("retried post: %v", err)
		}
		bad := ChatButton{Token: "tokA", Platform: "slack", DecisionID: "T-1-d1", Option: "reject", CreatedAt: chatNow}
		fresh := ChatButton{Token: "tokC", Platform: "slack", DecisionID: "T-1-d1", Option: "approve", CreatedAt: chatNow}
		if err := s.PutChatPost(ctx, p, []ChatButton{fresh, bad}); err == nil {
			t.Fatal("a token reused for another option was accepted")
		}
		if _, _, err := s.ChatButton(ctx, "slack", "tokC"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("button of a refused call: %v, want not found", err)
		}

		closedAt := chatNow.Add(time.Hour)
		if err := other.CloseChatPost(ctx, "slack", "T-1-d1", json.RawMessage(`[{"ts":"1.2","closed":true}]`), json.RawMessage(`{"option":"approve"}`), closedAt); err != nil {
			t.Fatal(err)
		}
		got, err = s.ChatPost(ctx, "slack", "T-1-d1")
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Outcome) != `{"option":"approve"}` || !got.ClosedAt.Equal(closedAt) || string(got.Messages) != `[{"ts":"1.2","closed":true}]` {
			t.Fatalf("closed post %+v", got)
		}
		// Posting again (a new copy) keeps the outcome.
		p.Messages = json.RawMessage(`[{"ts":"1.2","closed":true},{"ts":"3.4"}]`)
		if err := s.PutChatPost(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
		if got, _ = s.ChatPost(ctx, "slack", "T-1-d1"); got.Outcome == nil {
			t.Fatal("a re-post dropped the outcome")
		}
		if _, err := s.ChatPost(ctx, "slack", "T-9-d1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown post: %v", err)
		}
	})
}

func TestChatPostRefusesBadInput(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		var inv *InvalidError
		p := ChatPost{Platform: "slack", DecisionID: "d1", Subject: "T-1", Decision: json.RawMessage(`{`), PostedAt: chatNow}
		if err := s.PutChatPost(ctx, p, nil); !errors.As(err, &inv) || inv.Field != "decision" {
			t.Fatalf("bad decision JSON: %v", err)
		}
		p.Decision = json.RawMessage(`{}`)
		if err := s.PutChatPost(ctx, p, []ChatButton{{Token: "t", Platform: "slack", DecisionID: "d2"}}); !errors.As(err, &inv) || inv.Field != "buttons[0]" {
			t.Fatalf("button of another decision: %v", err)
		}
		p.Platform = ""
		if err := s.PutChatPost(ctx, p, nil); !errors.As(err, &inv) || inv.Field != "platform" {
			t.Fatalf("no platform: %v", err)
		}
	})
}

func TestChatNoticeClaimedOnceAcrossWorkers(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		workers := []*DB{s, openStore(t, u)}
		const keys = 20
		var (
			mu   sync.Mutex
			wins = map[string][]int{}
			errs []error
			wg   sync.WaitGroup
		)
		start := make(chan struct{})
		for w, db := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for k := range keys {
					key := fmt.Sprintf("status:wf:run:%d", k)
					c, err := db.ClaimChatNotice(ctx, "telegram", key, fmt.Sprintf("worker-%d", w), chatNow, 10*time.Minute)
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					} else if c == ClaimWon {
						wins[key] = append(wins[key], w)
					}
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(errors.Join(errs...))
		}
		for k := range keys {
			key := fmt.Sprintf("status:wf:run:%d", k)
			if len(wins[key]) != 1 {
				t.Errorf("%s won by workers %v, want exactly one", key, wins[key])
			}
		}
	})
}

func TestChatNoticeClaimLifecycle(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		const stale = 10 * time.Minute
		claim := func(holder string, at time.Time) Claim {
			t.Helper()
			c, err := s.ClaimChatNotice(ctx, "slack", "escalation:m1", holder, at, stale)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		if c := claim("a", chatNow); c != ClaimWon {
			t.Fatalf("first claim: %s", c)
		}
		if c := claim("b", chatNow.Add(time.Minute)); c != ClaimBusy {
			t.Fatalf("claim while a posts: %s, want busy", c)
		}
		// a's post failed: it gives the claim back, b takes it at once.
		if err := s.UnclaimChatNotice(ctx, "slack", "escalation:m1", "a"); err != nil {
			t.Fatal(err)
		}
		if c := claim("b", chatNow.Add(time.Minute)); c != ClaimWon {
			t.Fatalf("claim after unclaim: %s", c)
		}
		// b dies before posting: its claim goes stale and c takes it.
		if c := claim("c", chatNow.Add(time.Minute+stale-time.Second)); c != ClaimBusy {
			t.Fatalf("claim before b's went stale: %s, want busy", c)
		}
		if c := claim("c", chatNow.Add(time.Minute+stale)); c != ClaimWon {
			t.Fatalf("claim after b's went stale: %s, want won", c)
		}
		// b's late unclaim leaves c's claim alone.
		if err := s.UnclaimChatNotice(ctx, "slack", "escalation:m1", "b"); err != nil {
			t.Fatal(err)
		}
		if err := s.PostedChatNotice(ctx, "slack", "escalation:m1", "c", chatNow.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if c := claim("d", chatNow.Add(48*time.Hour)); c != ClaimPosted {
			t.Fatalf("claim of a posted notice: %s, want posted", c)
		}
		if err := s.UnclaimChatNotice(ctx, "slack", "escalation:m1", "c"); err != nil {
			t.Fatal(err)
		}
		if c := claim("d", chatNow.Add(48*time.Hour)); c != ClaimPosted {
			t.Fatalf("a posted notice was unclaimed: %s", c)
		}
	})
}

func TestChatNotes(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		other := openStore(t, u)
		n := ChatNote{Platform: "telegram", Key: "-100:42", Token: "tokA", UserID: "7", CreatedAt: chatNow, ExpiresAt: chatNow.Add(24 * time.Hour)}
		if err := s.PutChatNote(ctx, n); err != nil {
			t.Fatal(err)
		}
		got, err := other.ChatNote(ctx, "telegram", "-100:42", chatNow.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Fatalf("note %+v, want %+v", got, n)
		}
		if _, err := other.ChatNote(ctx, "telegram", "-100:42", n.ExpiresAt); !errors.Is(err, ErrNotFound) {
			t.Fatalf("expired note: %v, want not found", err)
		}
		// Two workers take the same reply: one drops the prompt and goes on.
		first, err := s.DropChatNote(ctx, "telegram", "-100:42")
		if err != nil {
			t.Fatal(err)
		}
		second, err := other.DropChatNote(ctx, "telegram", "-100:42")
		if err != nil {
			t.Fatal(err)
		}
		if !first || second {
			t.Fatalf("drops: %v then %v, want true then false", first, second)
		}
		var inv *InvalidError
		n.ExpiresAt = n.CreatedAt
		if err := s.PutChatNote(ctx, n); !errors.As(err, &inv) || inv.Field != "expires_at" {
			t.Fatalf("note expiring when made: %v", err)
		}
	})
}

func TestPruneChat(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		keep := ChatKeep{Decided: 30 * 24 * time.Hour, Notices: 7 * 24 * time.Hour}
		now := chatNow.Add(40 * 24 * time.Hour)
		post := func(id string, closedAt time.Time) {
			t.Helper()
			p := ChatPost{Platform: "slack", DecisionID: id, Subject: "T-1", Decision: json.RawMessage(`{}`), PostedAt: chatNow}
			b := ChatButton{Token: "tok-" + id, Platform: "slack", DecisionID: id, Subject: "T-1", Option: "approve", CreatedAt: chatNow}
			if err := s.PutChatPost(ctx, p, []ChatButton{b}); err != nil {
				t.Fatal(err)
			}
			if !closedAt.IsZero() {
				if err := s.CloseChatPost(ctx, "slack", id, nil, json.RawMessage(`{}`), closedAt); err != nil {
					t.Fatal(err)
				}
			}
		}
		post("old", now.Add(-keep.Decided-time.Hour))
		post("fresh", now.Add(-time.Hour))
		post("open", time.Time{})
		for key, at := range map[string]time.Time{"stale": now.Add(-keep.Notices - time.Hour), "recent": now} {
			if _, err := s.ClaimChatNotice(ctx, "slack", key, "w", at, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.PutChatNote(ctx, ChatNote{Platform: "telegram", Key: "1:2", Token: "t", UserID: "7", CreatedAt: chatNow, ExpiresAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.PruneChat(ctx, now, keep); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]bool{"old": false, "fresh": true, "open": true} {
			_, err := s.ChatPost(ctx, "slack", id)
			_, _, berr := s.ChatButton(ctx, "slack", "tok-"+id)
			if (err == nil) != want || (berr == nil) != want {
				t.Errorf("post %s after prune: %v, button: %v; want kept=%v", id, err, berr, want)
			}
		}
		for key, want := range map[string]Claim{"stale": ClaimWon, "recent": ClaimBusy} {
			if c, err := s.ClaimChatNotice(ctx, "slack", key, "other", now, time.Hour); err != nil || c != want {
				t.Errorf("notice %s after prune: %v %v, want %s", key, c, err, want)
			}
		}
		var n int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM chat_notes`).Scan(&n); err != nil || n != 0 {
			t.Errorf("expired notes left: %d %v", n, err)
		}
	})
}
