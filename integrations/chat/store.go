// Package chat is what the Slack and Telegram bots share: their state of
// posted decisions, button tokens and note prompts (a state file, or the
// SSOT shared by every worker), posting notices once across retries and workers,
// the admin check and the decide-and-explain flow, and plain-text pieces.
// Each platform package keeps its transport, API calls and renderer.
package chat

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/workflows/decision"
)

// How long closed decisions and notice keys are kept; a late click on an
// old message then still learns who decided.
const (
	KeepDecided = 30 * 24 * time.Hour
	KeepNotices = 7 * 24 * time.Hour
)

// Ref is a platform's reference to one posted copy of a decision. It
// records whether that copy was edited to its outcome.
type Ref[R any] interface {
	// IsClosed reports whether the copy shows its outcome.
	IsClosed() bool
	// AsClosed returns the reference marked closed.
	AsClosed() R
	// String names the message in errors.
	String() string
}

// Posted is one decision and the copies of it the bot posted.
type Posted[R any] struct {
	Decision decision.Decision `json:"decision"`
	Messages []R               `json:"messages"`
	Outcome  *decision.Outcome `json:"outcome,omitempty"`
	// Again says which copies were posted again (reminders, escalations),
	// by the copy's String, so an edit keeps what they said.
	Again    map[string]Post `json:"again,omitempty"`
	PostedAt time.Time       `json:"posted_at"`
	// ClosedAt is when the outcome reached the bot, by the bot's clock.
	ClosedAt time.Time `json:"closed_at,omitzero"`
}

// Button is what a button token stands for. The token is all the
// platform sees. A click answers the decision as the button showed it:
// to its subject, with its digest, so an answer to a question that has
// changed since is refused.
type Button struct {
	DecisionID string `json:"decision_id"`
	Subject    string `json:"subject,omitempty"`
	Digest     string `json:"digest,omitempty"`
	Option     string `json:"option"`
}

// State is the part of a bot's state file every platform has.
type State[R any] struct {
	Decisions map[string]*Posted[R] `json:"decisions"`
	Buttons   map[string]Button     `json:"buttons"`
	// Notices are the keys of escalations and status notices posted, so
	// a retried Notify posts them once.
	Notices map[string]time.Time `json:"notices"`
	// Notes are the note prompts waiting for their reply, by the key the
	// platform gives the prompt.
	Notes map[string]Note `json:"notes"`
}

// Data is what a Store keeps: a State, or a struct that embeds one and
// adds the platform's own fields (and overrides Init and Prune for them).
type Data[R any] interface {
	// Base returns the shared part.
	Base() *State[R]
	// Init makes the maps of a freshly decoded state usable.
	Init()
	// Prune drops what is too old to keep.
	Prune(now time.Time)
}

// Base implements Data.
func (s *State[R]) Base() *State[R] { return s }

// Init implements Data.
func (s *State[R]) Init() {
	if s.Decisions == nil {
		s.Decisions = map[string]*Posted[R]{}
	}
	if s.Buttons == nil {
		s.Buttons = map[string]Button{}
	}
	if s.Notices == nil {
		s.Notices = map[string]time.Time{}
	}
	if s.Notes == nil {
		s.Notes = map[string]Note{}
	}
}

// Prune implements Data: closed decisions after KeepDecided, the buttons
// of decisions no longer kept, notice keys after KeepNotices, note
// prompts after NoteWait.
func (s *State[R]) Prune(now time.Time) {
	for id, p := range s.Decisions {
		if p.Outcome != nil && now.Sub(p.ClosedAt) > KeepDecided {
			delete(s.Decisions, id)
		}
	}
	for tok, b := range s.Buttons {
		if s.Decisions[b.DecisionID] == nil {
			delete(s.Buttons, tok)
		}
	}
	for k, at := range s.Notices {
		if now.Sub(at) > KeepNotices {
			delete(s.Notices, k)
		}
	}
	for k, n := range s.Notes {
		if now.Sub(n.At) > NoteWait {
			delete(s.Notes, k)
		}
	}
}

// Lookup finds what a button token stands for, and a copy of its
// decision as the button showed it: the subject and digest are the
// button's. ok is false when either is unknown.
func (s *State[R]) Lookup(token string) (b Button, p Posted[R], ok bool) {
	b, ok = s.Buttons[token]
	if !ok || s.Decisions[b.DecisionID] == nil {
		return b, p, false
	}
	p = *s.Decisions[b.DecisionID]
	// Buttons saved before they carried a subject and digest answer the
	// decision as last posted.
	if b.Subject != "" {
		p.Decision.Subject = b.Subject
	}
	if b.Digest != "" {
		p.Decision.Digest = b.Digest
	}
	return b, p, true
}

// tokensFor returns a button token per option of d, as d stands: those
// of buttons (d's, by token) that carry its digest, and new ones where
// none does; fresh are the new ones, for the caller to record once they
// are used.
func tokensFor(d decision.Decision, buttons map[string]Button) (out []string, fresh map[string]Button) {
	out = make([]string, len(d.Options))
	for tok, b := range buttons {
		if b.DecisionID != d.ID || b.Digest != d.Digest {
			continue
		}
		for i, o := range d.Options {
			if o.ID == b.Option && (out[i] == "" || tok < out[i]) {
				out[i] = tok
			}
		}
	}
	fresh = map[string]Button{}
	for i, o := range d.Options {
		if out[i] == "" {
			out[i] = NewToken()
			fresh[out[i]] = Button{DecisionID: d.ID, Subject: d.Subject, Digest: d.Digest, Option: o.ID}
		}
	}
	return out, fresh
}

// Store is a bot's JSON state file, rewritten atomically on each change.
type Store[R any, D Data[R]] struct {
	path string
	mu   sync.Mutex
	data D
}

// OpenStore reads file in dir into data, creating dir if needed; a
// missing file is an empty state, a corrupt one an error.
func OpenStore[R any, D Data[R]](dir, file string, data D) (*Store[R, D], error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir %s: %w", dir, err)
	}
	s := &Store[R, D]{path: filepath.Join(dir, file), data: data}
	raw, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading state %s: %w", s.path, err)
	default:
		if err := json.Unmarshal(raw, s.data); err != nil {
			return nil, fmt.Errorf("decoding state %s: %w", s.path, err)
		}
	}
	s.data.Init()
	return s, nil
}

// Path is the state file's path.
func (s *Store[R, D]) Path() string { return s.path }

// View runs fn under the lock without saving.
func (s *Store[R, D]) View(fn func(D)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.data)
}

// Update runs fn under the lock, prunes old entries and saves.
func (s *Store[R, D]) Update(now time.Time, fn func(D)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.data)
	s.data.Prune(now)
	return s.save()
}

// Lookup finds what a button token stands for; see State.Lookup.
func (s *Store[R, D]) Lookup(token string) (b Button, p Posted[R], ok bool) {
	s.View(func(d D) { b, p, ok = d.Base().Lookup(token) })
	return b, p, ok
}

func (s *Store[R, D]) save() error {
	raw, err := json.MarshalIndent(s.data, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state %s: %w", s.path, err)
	}
	prefix := "." + strings.TrimSuffix(filepath.Base(s.path), filepath.Ext(s.path))
	tmp, err := os.CreateTemp(filepath.Dir(s.path), prefix+"-*.tmp")
	if err != nil {
		return fmt.Errorf("writing state %s: %w", s.path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return fmt.Errorf("writing state %s: %w", s.path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("syncing state %s: %w", s.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing state %s: %w", s.path, err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("replacing state %s: %w", s.path, err)
	}
	return nil
}

// NewToken returns an opaque, unguessable button value.
func NewToken() string {
	b := make([]byte, 9)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}
