package telegram

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ampflow/ampflow/workflows/task"
)

// StateFile is the name of the bot's state file in its state dir.
const StateFile = "telegram.json"

// How long closed decisions and notice keys are kept; a late click on an
// old message then still learns who decided.
const (
	keepDecided = 30 * 24 * time.Hour
	keepNotices = 7 * 24 * time.Hour
	keepNotes   = 24 * time.Hour
)

// msgRef is one posted copy of a decision.
type msgRef struct {
	ChatID    int64 `json:"chat_id"`
	MessageID int   `json:"message_id"`
	Closed    bool  `json:"closed,omitempty"`
}

// noteRequest is an option waiting for its note: the admin who chose it
// must reply to the bot's prompt.
type noteRequest struct {
	Token  string    `json:"token"`
	UserID string    `json:"user_id"`
	At     time.Time `json:"at"`
}

type posted struct {
	Decision task.Decision `json:"decision"`
	Messages []msgRef      `json:"messages"`
	Outcome  *task.Outcome `json:"outcome,omitempty"`
	PostedAt time.Time     `json:"posted_at"`
	// ClosedAt is when the outcome reached the bot, by the bot's clock.
	ClosedAt time.Time `json:"closed_at,omitzero"`
}

// button is what a button's callback data stands for. The token is all
// Telegram sees.
type button struct {
	DecisionID string `json:"decision_id"`
	Option     string `json:"option"`
}

type stateData struct {
	Decisions map[string]*posted `json:"decisions"`
	Buttons   map[string]button  `json:"buttons"`
	// Notices are the keys of escalations and status notices posted, so
	// a retried Notify posts them once.
	Notices map[string]time.Time `json:"notices"`
	// Notes are the pending note prompts by "chat:message" of the prompt.
	Notes map[string]noteRequest `json:"notes"`
}

// store is the bot's JSON state file, rewritten atomically on each change.
type store struct {
	path string
	mu   sync.Mutex
	data stateData
}

func openStore(dir string) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir %s: %w", dir, err)
	}
	s := &store{path: filepath.Join(dir, StateFile)}
	raw, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading state %s: %w", s.path, err)
	default:
		if err := json.Unmarshal(raw, &s.data); err != nil {
			return nil, fmt.Errorf("decoding state %s: %w", s.path, err)
		}
	}
	if s.data.Decisions == nil {
		s.data.Decisions = map[string]*posted{}
	}
	if s.data.Buttons == nil {
		s.data.Buttons = map[string]button{}
	}
	if s.data.Notices == nil {
		s.data.Notices = map[string]time.Time{}
	}
	if s.data.Notes == nil {
		s.data.Notes = map[string]noteRequest{}
	}
	return s, nil
}

// view runs fn under the lock without saving.
func (s *store) view(fn func(*stateData)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.data)
}

// update runs fn under the lock, prunes old entries and saves.
func (s *store) update(now time.Time, fn func(*stateData)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.data)
	s.data.prune(now)
	return s.save()
}

func (d *stateData) prune(now time.Time) {
	for id, p := range d.Decisions {
		if p.Outcome != nil && now.Sub(p.ClosedAt) > keepDecided {
			delete(d.Decisions, id)
		}
	}
	for tok, b := range d.Buttons {
		if d.Decisions[b.DecisionID] == nil {
			delete(d.Buttons, tok)
		}
	}
	for k, at := range d.Notices {
		if now.Sub(at) > keepNotices {
			delete(d.Notices, k)
		}
	}
	for k, n := range d.Notes {
		if now.Sub(n.At) > keepNotes {
			delete(d.Notes, k)
		}
	}
}

func (s *store) save() error {
	raw, err := json.MarshalIndent(s.data, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding state %s: %w", s.path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".telegram-*.tmp")
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

// newToken returns an opaque, unguessable button value.
func newToken() string {
	b := make([]byte, 9)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}
