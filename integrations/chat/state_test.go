package chat_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/activities/ssot/ssottest"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/integrations/chat"
	"github.com/ampflow/ampflow/integrations/chat/chattest"
)

// ref is a fake platform's reference to a posted copy.
type ref struct {
	By     string `json:"by"`
	N      int    `json:"n"`
	Closed bool   `json:"closed,omitempty"`
}

func (r ref) IsClosed() bool { return r.Closed }
func (r ref) AsClosed() ref  { r.Closed = true; return r }
func (r ref) String() string { return r.key() }
func (r ref) key() string    { return fmt.Sprintf("%s#%d", r.By, r.N) }

// platform fakes one chat platform that several workers post to.
type platform struct {
	mu      sync.Mutex
	posts   []decision.Decision
	tokens  map[string][]string // decision id → tokens in option order
	edits   map[string]int      // ref → edits
	opens   map[string][]string // ref → what each EditOpen showed
	hows    []chat.Post         // how each post was posted
	notices []string
	fail    int // posts to fail before the next succeeds
}

func newPlatform() *platform {
	return &platform{tokens: map[string][]string{}, edits: map[string]int{}, opens: map[string][]string{}}
}

// poster is one worker's side of the platform.
type poster struct {
	p      *platform
	worker string
}

func (w poster) PostDecision(_ context.Context, d decision.Decision, tokens []string, how chat.Post) (ref, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.fail > 0 {
		w.p.fail--
		return ref{}, errors.New("platform unavailable")
	}
	w.p.posts = append(w.p.posts, d)
	w.p.hows = append(w.p.hows, how)
	w.p.tokens[d.ID] = tokens
	return ref{By: w.worker, N: len(w.p.posts)}, nil
}

// EditOpen records what the copy shows: the progress, whether it reads as
// a reminder, and its buttons.
func (w poster) EditOpen(_ context.Context, r ref, d decision.Decision, tokens []string, how chat.Post) error {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.p.opens[r.key()] = append(w.p.opens[r.key()], fmt.Sprintf("%s reminder=%v buttons=%v", d.Progress(), how.Reminder, tokens))
	return nil
}

func (w poster) EditClosed(_ context.Context, r ref, _ decision.Decision, _ decision.Outcome) error {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.p.edits[r.key()]++
	return nil
}

func (w poster) PostEscalation(_ context.Context, m amp.Message) error {
	return w.notice("escalation " + m.MsgID)
}

func (w poster) PostStatus(_ context.Context, in notify.Input) error {
	return w.notice("status " + in.Text)
}

func (w poster) notice(s string) error {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.fail > 0 {
		w.p.fail--
		return errors.New("platform unavailable")
	}
	w.p.notices = append(w.p.notices, s)
	return nil
}

func (p *platform) counts() (posts, notices int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.posts), len(p.notices)
}

// clock is a settable time shared by a test's workers.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type core = chat.Core[ref]

func newCore(worker string, p *platform, clk *clock, dec chat.Decider) *core {
	return &core{
		Channel: "fake", Platform: "Fake", By: func(u string) string { return "fake:" + u },
		Admins: chat.AdminSet([]string{"U1"}), Poster: poster{p, worker}, Decider: dec,
		Log: slog.New(slog.DiscardHandler), Now: clk.Now, DecideTimeout: 10 * time.Second,
	}
}

// backend makes the state of a test's workers.
type backend struct {
	name  string
	state func(t *testing.T) func(c *core)
}

func backends() []backend {
	var bs []backend
	for _, e := range ssottest.Engines() {
		bs = append(bs, backend{name: e.Name, state: func(t *testing.T) func(c *core) {
			u := e.URL(t)
			return func(c *core) {
				// Each worker opens the database itself.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				db, err := ssot.Open(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				c.State = chat.NewSQLState[ref](db, "fake", c.Log)
			}
		}})
	}
	return bs
}

func escalation(id string) notify.Input {
	return notify.Input{TaskID: "T-2026-001", Event: notify.Escalation, Message: &amp.Message{MsgID: id}}
}

func TestCoreStatePostsOnceAndRecovers(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			p, clk := newPlatform(), &clock{now: chattest.RaisedAt}
			dec := &chattest.Decider{}
			c := newCore("w1", p, clk, dec)
			b.state(t)(c)
			d := chattest.PlanDecision()

			// A failed post leaves nothing claimed: the retry posts.
			p.fail = 1
			if err := c.Notify(ctx, chattest.Opened(d)); err == nil {
				t.Fatal("a failed post reported success")
			}
			for range 3 {
				if err := c.Notify(ctx, chattest.Opened(d)); err != nil {
					t.Fatal(err)
				}
			}
			p.fail = 1
			if err := c.Notify(ctx, escalation("m1")); err == nil {
				t.Fatal("a failed notice reported success")
			}
			for range 3 {
				if err := c.Notify(ctx, escalation("m1")); err != nil {
					t.Fatal(err)
				}
			}
			if posts, notices := p.counts(); posts != 1 || notices != 1 {
				t.Fatalf("posted %d decisions and %d notices, want 1 and 1", posts, notices)
			}

			// A click resolves to the decision; deciding edits the copy once.
			tokens := p.tokens[d.ID]
			got, opt, refusal := c.Pick(tokens[0])
			if refusal != "" || opt.ID != decision.OptApprove || got.Decision.ID != d.ID || got.Decision.Subject != d.Subject {
				t.Fatalf("pick: %+v %+v %q", got.Decision, opt, refusal)
			}
			if _, _, refusal := c.Pick("no-such-token"); refusal != chat.StaleButtonText {
				t.Fatalf("unknown token: %q", refusal)
			}
			if text, refused := c.Decide(ctx, "U1", got.Decision, opt.ID, ""); refused {
				t.Fatalf("decide refused: %s", text)
			}
			o := dec.Decisions()[d.ID]
			if err := c.Notify(ctx, chattest.Closed(d, o)); err != nil {
				t.Fatal(err)
			}
			if n := p.edits["w1#1"]; n != 1 {
				t.Fatalf("copy edited %d times, want once", n)
			}
			if _, _, refusal := c.Pick(tokens[1]); refusal == "" {
				t.Fatal("a click on a decided decision was not refused")
			}

			// A note prompt waits NoteWait for its reply, then is gone.
			n := chat.Note{Token: tokens[1], UserID: "U1", At: clk.Now()}
			if err := c.PutNote(ctx, "chat:7", n); err != nil {
				t.Fatal(err)
			}
			clk.add(chat.NoteWait - time.Second)
			if got, ok, err := c.Note(ctx, "chat:7"); err != nil || !ok || got.Token != n.Token || got.UserID != "U1" {
				t.Fatalf("note: %+v %v %v", got, ok, err)
			}
			clk.add(time.Second)
			if _, ok, err := c.Note(ctx, "chat:7"); err != nil || ok {
				t.Fatalf("note after NoteWait: %v %v, want none", ok, err)
			}
			if ok, err := c.DropNote(ctx, "chat:7"); err != nil || !ok {
				t.Fatalf("drop: %v %v", ok, err)
			}
			if ok, err := c.DropNote(ctx, "chat:7"); err != nil || ok {
				t.Fatalf("second drop: %v %v, want false", ok, err)
			}
		})
	}
}

func TestCoreStateSharedByWorkers(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			p, clk := newPlatform(), &clock{now: chattest.RaisedAt}
			dec := &chattest.Decider{}
			mk := b.state(t)
			workers := []*core{newCore("w1", p, clk, dec), newCore("w2", p, clk, dec)}
			for _, c := range workers {
				mk(c)
			}
			d := chattest.PlanDecision()

			// Both workers get the same notices at once (a retried activity,
			// the re-post at start): each is posted once.
			var wg sync.WaitGroup
			for _, c := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 10 {
						// A worker that loses a race is told to retry;
						// it does, as the activity would.
						for try := 0; ; try++ {
							err := c.Notify(ctx, chattest.Opened(d))
							if err == nil {
								err = c.Notify(ctx, escalation(fmt.Sprintf("m%d", i)))
							}
							if err == nil {
								break
							}
							if !errors.Is(err, chat.ErrNoticeBusy) || try == 100 {
								t.Error(err)
								return
							}
							time.Sleep(time.Millisecond)
						}
					}
				}()
			}
			wg.Wait()
			if posts, notices := p.counts(); posts != 1 || notices != 10 {
				t.Fatalf("posted %d decisions and %d notices, want 1 and 10", posts, notices)
			}

			// Either worker answers the click, whichever posted.
			tokens := p.tokens[d.ID]
			for _, c := range workers {
				got, opt, refusal := c.Pick(tokens[0])
				if refusal != "" || opt.ID != decision.OptApprove || got.Decision.ID != d.ID || len(got.Messages) != 1 {
					t.Fatalf("pick: %+v %+v %q", got, opt, refusal)
				}
			}
			if text, refused := workers[1].Decide(ctx, "U1", d, decision.OptApprove, ""); refused {
				t.Fatalf("decide refused: %s", text)
			}
			// The closed notice, run at the other worker, finds the copy
			// edited already.
			if err := workers[0].Notify(ctx, chattest.Closed(d, dec.Decisions()[d.ID])); err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, n := range p.edits {
				total += n
			}
			if total != 1 {
				t.Fatalf("edits %v, want one in all", p.edits)
			}
			if _, _, refusal := workers[0].Pick(tokens[1]); refusal == "" {
				t.Fatal("a click on a decided decision was not refused")
			}

			// A note prompt sent by one worker is answered at the other.
			if err := workers[0].PutNote(ctx, "chat:9", chat.Note{Token: tokens[1], UserID: "U1", At: clk.Now()}); err != nil {
				t.Fatal(err)
			}
			if n, ok, err := workers[1].Note(ctx, "chat:9"); err != nil || !ok || n.Token != tokens[1] {
				t.Fatalf("note at the other worker: %+v %v %v", n, ok, err)
			}
		})
	}
}

func TestCoreStateStaleClaimIsTakenOver(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			p, clk := newPlatform(), &clock{now: chattest.RaisedAt}
			mk := b.state(t)
			dead, alive := newCore("w1", p, clk, &chattest.Decider{}), newCore("w2", p, clk, &chattest.Decider{})
			mk(dead)
			mk(alive)
			// w1 claims the notice and dies before posting.
			if c, err := dead.State.ClaimNotice(ctx, "escalation:m1", clk.Now()); err != nil || c != ssot.ClaimWon {
				t.Fatalf("claim: %v %v", c, err)
			}
			if err := alive.Notify(ctx, escalation("m1")); !errors.Is(err, chat.ErrNoticeBusy) {
				t.Fatalf("notice claimed by a live worker: %v, want ErrNoticeBusy", err)
			}
			clk.add(chat.ClaimStale)
			if err := alive.Notify(ctx, escalation("m1")); err != nil {
				t.Fatal(err)
			}
			if _, notices := p.counts(); notices != 1 {
				t.Fatalf("%d notices, want 1", notices)
			}
		})
	}
}
