package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
)

// PruneEvery is how often a SQLState drops what is too old to keep
// (KeepDecided, KeepNotices, NoteWait), at its next write.
const PruneEvery = time.Hour

// SQLState keeps the Posts of a platform's bot in the SSOT, shared by
// every worker. R is the platform's message reference, kept as JSON.
type SQLState[R any] struct {
	db       *ssot.DB
	platform string
	// holder names this process's notice claims.
	holder string
	log    *slog.Logger

	mu         sync.Mutex
	lastPruned time.Time
}

var _ Posts[struct{}] = (*SQLState[struct{}])(nil)

// NewSQLState keeps the state of platform's bot (its Channel, "slack")
// in db.
func NewSQLState[R any](db *ssot.DB, platform string, log *slog.Logger) *SQLState[R] {
	if log == nil {
		log = slog.Default()
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return &SQLState[R]{db: db, platform: platform, holder: hex.EncodeToString(b), log: log}
}

func (s *SQLState[R]) decode(cp ssot.ChatPost) (Posted[R], error) {
	p := Posted[R]{PostedAt: cp.PostedAt, ClosedAt: cp.ClosedAt}
	if err := json.Unmarshal(cp.Decision, &p.Decision); err != nil {
		return p, fmt.Errorf("decoding the post of decision %s: %w", cp.DecisionID, err)
	}
	if err := json.Unmarshal(cp.Messages, &p.Messages); err != nil {
		return p, fmt.Errorf("decoding the messages of decision %s: %w", cp.DecisionID, err)
	}
	if len(cp.Again) > 0 {
		if err := json.Unmarshal(cp.Again, &p.Again); err != nil {
			return p, fmt.Errorf("decoding the copies posted again of decision %s: %w", cp.DecisionID, err)
		}
	}
	if len(cp.Outcome) > 0 {
		p.Outcome = new(decision.Outcome)
		if err := json.Unmarshal(cp.Outcome, p.Outcome); err != nil {
			return p, fmt.Errorf("decoding the outcome of decision %s: %w", cp.DecisionID, err)
		}
	}
	return p, nil
}

// Posted implements Posts.
func (s *SQLState[R]) Posted(ctx context.Context, id string) (Posted[R], bool, error) {
	cp, err := s.db.ChatPost(ctx, s.platform, id)
	if errors.Is(err, ssot.ErrNotFound) {
		return Posted[R]{}, false, nil
	}
	if err != nil {
		return Posted[R]{}, false, err
	}
	p, err := s.decode(cp)
	return p, err == nil, err
}

// SavePosted implements Posts.
func (s *SQLState[R]) SavePosted(ctx context.Context, id string, at time.Time, buttons map[string]Button, update func(*Posted[R], bool) bool) error {
	btns := make([]ssot.ChatButton, 0, len(buttons))
	for tok, b := range buttons {
		btns = append(btns, ssot.ChatButton{Token: tok, Platform: s.platform, DecisionID: b.DecisionID,
			Subject: b.Subject, Digest: b.Digest, Option: b.Option, CreatedAt: at})
	}
	var encErr error
	err := s.db.UpdateChatPost(ctx, s.platform, id, btns, func(cp *ssot.ChatPost, found bool) bool {
		var p Posted[R]
		if found {
			if p, encErr = s.decode(*cp); encErr != nil {
				return false
			}
		}
		if !update(&p, found) {
			return false
		}
		cp.Subject = p.Decision.Subject
		if cp.Decision, encErr = json.Marshal(p.Decision); encErr != nil {
			encErr = fmt.Errorf("encoding decision %s: %w", id, encErr)
			return false
		}
		if cp.Messages, encErr = json.Marshal(p.Messages); encErr != nil {
			encErr = fmt.Errorf("encoding the messages of decision %s: %w", id, encErr)
			return false
		}
		cp.Again = nil
		if len(p.Again) > 0 {
			if cp.Again, encErr = json.Marshal(p.Again); encErr != nil {
				encErr = fmt.Errorf("encoding the copies posted again of decision %s: %w", id, encErr)
				return false
			}
		}
		cp.PostedAt = p.PostedAt
		return true
	})
	if err = errors.Join(encErr, err); err != nil {
		return err
	}
	s.prune(ctx, at)
	return nil
}

// SaveClosed implements Posts.
func (s *SQLState[R]) SaveClosed(ctx context.Context, id string, refs []R, o decision.Outcome, at time.Time) error {
	msgs, err := json.Marshal(refs)
	if err != nil {
		return fmt.Errorf("encoding the messages of decision %s: %w", id, err)
	}
	out, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encoding the outcome of decision %s: %w", id, err)
	}
	return s.db.CloseChatPost(ctx, s.platform, id, msgs, out, at)
}

// Button implements Posts.
func (s *SQLState[R]) Button(ctx context.Context, token string) (Button, Posted[R], bool, error) {
	cb, cp, err := s.db.ChatButton(ctx, s.platform, token)
	if errors.Is(err, ssot.ErrNotFound) {
		return Button{}, Posted[R]{}, false, nil
	}
	if err != nil {
		return Button{}, Posted[R]{}, false, err
	}
	p, err := s.decode(cp)
	if err != nil {
		return Button{}, Posted[R]{}, false, err
	}
	b := Button{DecisionID: cb.DecisionID, Subject: cb.Subject, Digest: cb.Digest, Option: cb.Option}
	// The decision as this button showed it; a button that carries no
	// subject or digest answers the decision as last posted.
	if b.Subject != "" {
		p.Decision.Subject = b.Subject
	}
	if b.Digest != "" {
		p.Decision.Digest = b.Digest
	}
	return b, p, true, nil
}

// Buttons implements Posts.
func (s *SQLState[R]) Buttons(ctx context.Context, id string) (map[string]Button, error) {
	cbs, err := s.db.ChatButtons(ctx, s.platform, id)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Button, len(cbs))
	for _, cb := range cbs {
		out[cb.Token] = Button{DecisionID: cb.DecisionID, Subject: cb.Subject, Digest: cb.Digest, Option: cb.Option}
	}
	return out, nil
}

// ClaimNotice implements Posts.
func (s *SQLState[R]) ClaimNotice(ctx context.Context, key string, at time.Time) (ssot.Claim, error) {
	return s.db.ClaimChatNotice(ctx, s.platform, key, s.holder, at, ClaimStale)
}

// PostedNotice implements Posts.
func (s *SQLState[R]) PostedNotice(ctx context.Context, key string, at time.Time) error {
	if err := s.db.PostedChatNotice(ctx, s.platform, key, s.holder, at); err != nil {
		return err
	}
	s.prune(ctx, at)
	return nil
}

// UnclaimNotice implements Posts.
func (s *SQLState[R]) UnclaimNotice(ctx context.Context, key string) error {
	return s.db.UnclaimChatNotice(ctx, s.platform, key, s.holder)
}

// PutNote implements Posts.
func (s *SQLState[R]) PutNote(ctx context.Context, key string, n Note) error {
	return s.db.PutChatNote(ctx, ssot.ChatNote{Platform: s.platform, Key: key, Token: n.Token, UserID: n.UserID,
		CreatedAt: n.At, ExpiresAt: n.At.Add(NoteWait)})
}

// Note implements Posts.
func (s *SQLState[R]) Note(ctx context.Context, key string, now time.Time) (Note, bool, error) {
	cn, err := s.db.ChatNote(ctx, s.platform, key, now)
	if errors.Is(err, ssot.ErrNotFound) {
		return Note{}, false, nil
	}
	if err != nil {
		return Note{}, false, err
	}
	return Note{Token: cn.Token, UserID: cn.UserID, At: cn.CreatedAt}, true, nil
}

// DropNote implements Posts.
func (s *SQLState[R]) DropNote(ctx context.Context, key string) (bool, error) {
	return s.db.DropChatNote(ctx, s.platform, key)
}

// prune drops old state at most once per PruneEvery; a failure is logged
// and tried again at the next write, as the write itself succeeded.
func (s *SQLState[R]) prune(ctx context.Context, now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.lastPruned) >= PruneEvery
	if due {
		s.lastPruned = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.db.PruneChat(ctx, now, ssot.ChatKeep{Decided: KeepDecided, Notices: KeepNotices}); err != nil {
		s.log.Warn("pruning chat state", "platform", s.platform, "err", err)
		s.mu.Lock()
		s.lastPruned = time.Time{}
		s.mu.Unlock()
	}
}
