package chat

import (
	"context"
	"errors"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
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

// Posts is where a bot keeps what it posted: the SSOT that every
// worker shares (NewSQLState). Core serialises its own calls; several
// workers may call at once.
type Posts[R any] interface {
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
	// the button showed it: the subject and digest are the button's, when
	// it carries them; ok is false when either is unknown.
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

// PutNote records a note prompt; see Posts.
func (c *Core[R]) PutNote(ctx context.Context, key string, n Note) error {
	return c.State.PutNote(ctx, key, n)
}

// Note finds a note prompt that still waits; see Posts.
func (c *Core[R]) Note(ctx context.Context, key string) (Note, bool, error) {
	return c.State.Note(ctx, key, c.Now())
}

// DropNote removes a note prompt; see Posts.
func (c *Core[R]) DropNote(ctx context.Context, key string) (bool, error) {
	return c.State.DropNote(ctx, key)
}
