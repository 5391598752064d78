package ssot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Notices claimed once across workers, and note prompts: the chat bots'
// state that is not a posted decision.

// ChatNote is a prompt for the note an option requires: the admin asked
// (UserID) must reply to the prompt (Key) before ExpiresAt.
type ChatNote struct {
	Platform  string
	Key       string
	Token     string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Claim says what ClaimChatNotice found.
type Claim int

// Claims.
const (
	// ClaimWon: the caller holds the key and should post.
	ClaimWon Claim = iota + 1
	// ClaimPosted: the notice was posted already.
	ClaimPosted
	// ClaimBusy: another holder claimed the key lately and has not
	// posted yet; ask again later.
	ClaimBusy
)

func (c Claim) String() string {
	switch c {
	case ClaimWon:
		return "won"
	case ClaimPosted:
		return "posted"
	case ClaimBusy:
		return "busy"
	}
	return fmt.Sprintf("Claim(%d)", int(c))
}

// ClaimChatNotice claims key of platform for holder, so that one worker
// posts it once. A claim not posted within stale of at is taken to be
// of a holder that died, and can be claimed again.
func (s *DB) ClaimChatNotice(ctx context.Context, platform, key, holder string, at time.Time, stale time.Duration) (Claim, error) {
	if err := checkChat(platform, map[string]string{"notice key": key, "holder": holder}); err != nil {
		return 0, err
	}
	// One statement: the insert, or the take-over of a stale claim, is
	// atomic on both engines, so of two racing workers exactly one gets a
	// row back.
	rows, err := s.db.QueryContext(ctx, s.rebind(`INSERT INTO chat_notices (platform, notice_key, holder, claimed_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (platform, notice_key) DO UPDATE SET holder = excluded.holder, claimed_at = excluded.claimed_at
		WHERE chat_notices.posted_at = 0 AND chat_notices.claimed_at <= ?
		RETURNING holder`), platform, key, holder, micros(at), micros(at.Add(-stale)))
	if err != nil {
		return 0, fmt.Errorf("claiming chat notice %s/%s: %w", platform, key, err)
	}
	won := rows.Next()
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("claiming chat notice %s/%s: %w", platform, key, err)
	}
	if won {
		return ClaimWon, nil
	}
	var posted int64
	if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT posted_at FROM chat_notices WHERE platform = ? AND notice_key = ?`),
		platform, key).Scan(&posted); err != nil {
		return 0, fmt.Errorf("reading chat notice %s/%s: %w", platform, key, err)
	}
	if posted != 0 {
		return ClaimPosted, nil
	}
	return ClaimBusy, nil
}

// PostedChatNotice marks key of platform posted; it is then never
// claimed again (until PruneChat drops it).
func (s *DB) PostedChatNotice(ctx context.Context, platform, key, holder string, at time.Time) error {
	if err := checkChat(platform, map[string]string{"notice key": key, "holder": holder}); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO chat_notices (platform, notice_key, holder, claimed_at, posted_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (platform, notice_key) DO UPDATE SET posted_at = excluded.posted_at`),
		platform, key, holder, micros(at), micros(at)); err != nil {
		return fmt.Errorf("marking chat notice %s/%s posted: %w", platform, key, err)
	}
	return nil
}

// UnclaimChatNotice gives back holder's claim of a notice not posted (the
// post failed), so that a retry may claim it at once.
func (s *DB) UnclaimChatNotice(ctx context.Context, platform, key, holder string) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM chat_notices
		WHERE platform = ? AND notice_key = ? AND holder = ? AND posted_at = 0`), platform, key, holder); err != nil {
		return fmt.Errorf("unclaiming chat notice %s/%s: %w", platform, key, err)
	}
	return nil
}

// PutChatNote records a note prompt, replacing one under the same key.
func (s *DB) PutChatNote(ctx context.Context, n ChatNote) error {
	if err := checkChat(n.Platform, map[string]string{"note key": n.Key, "token": n.Token, "user_id": n.UserID}); err != nil {
		return err
	}
	if !n.ExpiresAt.After(n.CreatedAt) {
		return &InvalidError{"expires_at", "must be after created_at"}
	}
	if _, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO chat_notes (platform, note_key, token, user_id, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (platform, note_key) DO UPDATE SET token = excluded.token, user_id = excluded.user_id,
			created_at = excluded.created_at, expires_at = excluded.expires_at`),
		n.Platform, n.Key, n.Token, n.UserID, micros(n.CreatedAt), micros(n.ExpiresAt)); err != nil {
		return fmt.Errorf("saving chat note %s/%s: %w", n.Platform, n.Key, err)
	}
	return nil
}

// ChatNote is the note prompt under key, unless it expired by now;
// ErrNotFound otherwise.
func (s *DB) ChatNote(ctx context.Context, platform, key string, now time.Time) (ChatNote, error) {
	n := ChatNote{Platform: platform, Key: key}
	var created, expires int64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT token, user_id, created_at, expires_at FROM chat_notes
		WHERE platform = ? AND note_key = ? AND expires_at > ?`), platform, key, micros(now)).Scan(&n.Token, &n.UserID, &created, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return n, fmt.Errorf("chat note %s/%s: %w", platform, key, ErrNotFound)
	case err != nil:
		return n, fmt.Errorf("reading chat note %s/%s: %w", platform, key, err)
	}
	n.CreatedAt, n.ExpiresAt = fromMicros(created), fromMicros(expires)
	return n, nil
}

// DropChatNote removes a note prompt; it reports whether there was one,
// so that of two workers taking the same reply one goes on.
func (s *DB) DropChatNote(ctx context.Context, platform, key string) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM chat_notes WHERE platform = ? AND note_key = ?`), platform, key)
	if err != nil {
		return false, fmt.Errorf("dropping chat note %s/%s: %w", platform, key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("dropping chat note %s/%s: %w", platform, key, err)
	}
	return n > 0, nil
}
