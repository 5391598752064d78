package chat

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/workflows/decision"
)

// ClaimStale is how long a claim to post a notice or a decision holds
// without the post being recorded; after it the claim is taken to be of
// a worker that died and another may post. A post, with its bounded
// rate-limit waits, takes a few minutes at most.
const ClaimStale = 10 * time.Minute

// NoteWait is how long a note prompt waits for its reply.
const NoteWait = 24 * time.Hour

// stateTimeout bounds a read of the state where the platform's callback
// gives no context (a button's lookup).
const stateTimeout = 10 * time.Second

// StateErrorText is what a clicker reads when the bot could not read its
// state.
const StateErrorText = "⚠️ ampflow could not read this decision just now; try again."

// ErrNoticeBusy is a notice or decision another worker claimed lately and
// has not posted yet: a retry later either finds it posted or, if that
// worker died, posts it.
var ErrNoticeBusy = errors.New("another worker is posting it")

// Note is a prompt for the note an option requires: the admin who chose
// the option (UserID) must reply to the prompt; Token is the option's
// button.
type Note struct {
	Token  string    `json:"token"`
	UserID string    `json:"user_id"`
	At     time.Time `json:"at"`
}

// StateStore is where a bot keeps what it posted: the state file of one
// worker (Store) or the SSOT that every worker shares (NewSQLState). Core
// serialises its own calls; several workers may call at once.
type StateStore[R any] interface {
	// Posted is the decision posted under id; ok is false when none was.
	Posted(ctx context.Context, id string) (p Posted[R], ok bool, err error)
	// SavePosted records the decision posted under id as update makes it
	// from the one recorded (found is false when none is: p is then the
	// zero value), and buttons (token → button, each carrying the subject
	// and digest it answers), in one step that no other worker's save
	// interleaves with, so a copy posted elsewhere meanwhile is kept.
	// When update returns false nothing is recorded. A decision recorded
	// closed stays closed: its Outcome and ClosedAt are not update's to
	// change. at is now, by the bot's clock.
	SavePosted(ctx context.Context, id string, at time.Time, buttons map[string]Button, update func(p *Posted[R], found bool) bool) error
	// SaveClosed records a decision's outcome and its posted copies as
	// they are now.
	SaveClosed(ctx context.Context, id string, refs []R, o decision.Outcome, at time.Time) error
	// Button finds what a token stands for and a copy of its decision as
	// the button showed it (the button's subject and digest, see
	// State.Lookup); ok is false when either is unknown.
	Button(ctx context.Context, token string) (b Button, p Posted[R], ok bool, err error)
	// Buttons are the buttons of decision id, by token.
	Buttons(ctx context.Context, id string) (map[string]Button, error)
	// ClaimNotice claims key so that one worker posts it: ssot.ClaimWon
	// (post it, then PostedNotice or, on failure, UnclaimNotice),
	// ssot.ClaimPosted (posted before) or ssot.ClaimBusy (another worker
	// is posting it).
	ClaimNotice(ctx context.Context, key string, at time.Time) (ssot.Claim, error)
	// PostedNotice records key as posted.
	PostedNotice(ctx context.Context, key string, at time.Time) error
	// UnclaimNotice gives back a claim whose post failed.
	UnclaimNotice(ctx context.Context, key string) error
	// PutNote records a note prompt under key (the prompt's message).
	PutNote(ctx context.Context, key string, n Note) error
	// Note is the prompt under key, unless older than NoteWait by now.
	Note(ctx context.Context, key string, now time.Time) (n Note, ok bool, err error)
	// DropNote removes the prompt under key and reports whether it was
	// there: of two workers taking the same reply, one goes on.
	DropNote(ctx context.Context, key string) (bool, error)
}

// state is where c keeps its state: State when set, else the file Store.
func (c *Core[R, D]) state() StateStore[R] {
	if c.State != nil {
		return c.State
	}
	return fileState[R, D]{c.Store}
}

// PutNote records a note prompt; see StateStore.
func (c *Core[R, D]) PutNote(ctx context.Context, key string, n Note) error {
	return c.state().PutNote(ctx, key, n)
}

// Note finds a note prompt that still waits; see StateStore.
func (c *Core[R, D]) Note(ctx context.Context, key string) (Note, bool, error) {
	return c.state().Note(ctx, key, c.Now())
}

// DropNote removes a note prompt; see StateStore.
func (c *Core[R, D]) DropNote(ctx context.Context, key string) (bool, error) {
	return c.state().DropNote(ctx, key)
}

// fileState is the StateStore of a state file. One process uses the
// file, and Core serialises posting, so a notice is claimed when it is
// not recorded posted, and a claim needs no record.
type fileState[R any, D Data[R]] struct{ s *Store[R, D] }

func (f fileState[R, D]) Posted(_ context.Context, id string) (p Posted[R], ok bool, _ error) {
	f.s.View(func(d D) {
		if q := d.Base().Decisions[id]; q != nil {
			p, ok = *q, true
		}
	})
	return p, ok, nil
}

func (f fileState[R, D]) SavePosted(_ context.Context, id string, at time.Time, buttons map[string]Button, update func(*Posted[R], bool) bool) error {
	return f.s.Update(at, func(d D) {
		st := d.Base()
		var p Posted[R]
		old := st.Decisions[id]
		if old != nil {
			p = *old
			p.Messages, p.Again = slices.Clone(old.Messages), maps.Clone(old.Again)
		}
		if !update(&p, old != nil) {
			return
		}
		if old != nil {
			p.Outcome, p.ClosedAt = old.Outcome, old.ClosedAt
		}
		st.Decisions[id] = &p
		maps.Copy(st.Buttons, buttons)
	})
}

func (f fileState[R, D]) Buttons(_ context.Context, id string) (map[string]Button, error) {
	out := map[string]Button{}
	f.s.View(func(d D) {
		for tok, b := range d.Base().Buttons {
			if b.DecisionID == id {
				out[tok] = b
			}
		}
	})
	return out, nil
}

func (f fileState[R, D]) SaveClosed(_ context.Context, id string, refs []R, o decision.Outcome, at time.Time) error {
	return f.s.Update(at, func(d D) {
		if p := d.Base().Decisions[id]; p != nil {
			p.Messages = refs
			p.Outcome = &o
			p.ClosedAt = at
		}
	})
}

func (f fileState[R, D]) Button(_ context.Context, token string) (Button, Posted[R], bool, error) {
	b, p, ok := f.s.Lookup(token)
	return b, p, ok, nil
}

func (f fileState[R, D]) ClaimNotice(_ context.Context, key string, _ time.Time) (ssot.Claim, error) {
	var done bool
	f.s.View(func(d D) { _, done = d.Base().Notices[key] })
	if done {
		return ssot.ClaimPosted, nil
	}
	return ssot.ClaimWon, nil
}

func (f fileState[R, D]) PostedNotice(_ context.Context, key string, at time.Time) error {
	return f.s.Update(at, func(d D) { d.Base().Notices[key] = at })
}

func (f fileState[R, D]) UnclaimNotice(context.Context, string) error { return nil }

func (f fileState[R, D]) PutNote(_ context.Context, key string, n Note) error {
	return f.s.Update(n.At, func(d D) { d.Base().Notes[key] = n })
}

func (f fileState[R, D]) Note(_ context.Context, key string, now time.Time) (n Note, ok bool, _ error) {
	f.s.View(func(d D) { n, ok = d.Base().Notes[key] })
	if ok && now.Sub(n.At) >= NoteWait {
		return Note{}, false, nil
	}
	return n, ok, nil
}

func (f fileState[R, D]) DropNote(_ context.Context, key string) (bool, error) {
	var ok bool
	var at time.Time
	f.s.View(func(d D) {
		var n Note
		n, ok = d.Base().Notes[key]
		at = n.At
	})
	if !ok {
		return false, nil
	}
	// Pruning here goes by the note's own time: nothing younger than it
	// is dropped. Looking again under the lock makes one of two
	// concurrent drops report the note.
	err := f.s.Update(at, func(d D) {
		_, ok = d.Base().Notes[key]
		delete(d.Base().Notes, key)
	})
	return ok, err
}
