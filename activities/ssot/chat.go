package ssot

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The chat bots' state: decisions posted, button tokens, note prompts and
// notices posted once. Each row belongs to a platform ("slack",
// "telegram"), so bots of several platforms share the tables. Times here
// are given by the caller (the bot's clock): they order and age rows, and
// a few seconds of difference between workers' clocks is nothing against
// the hours and minutes they are compared with.

// ChatPost is a decision a bot posted.
type ChatPost struct {
	Platform   string
	DecisionID string
	Subject    string
	// Decision is the decision as posted, Messages the platform's
	// references to its posted copies (a JSON array), Again how the
	// copies posted again (reminders, escalations) were posted (empty
	// when none was), Outcome the outcome once decided (empty while
	// open); all JSON, kept as given.
	Decision json.RawMessage
	Messages json.RawMessage
	Again    json.RawMessage
	Outcome  json.RawMessage
	PostedAt time.Time
	// ClosedAt is zero while the decision is open.
	ClosedAt time.Time
}

// ChatButton is what one button token stands for.
type ChatButton struct {
	Token      string
	Platform   string
	DecisionID string
	Subject    string
	Digest     string
	Option     string
	CreatedAt  time.Time
}

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

func checkChat(platform string, ids map[string]string) error {
	if err := checkID("platform", platform); err != nil {
		return err
	}
	for field, id := range ids {
		if err := checkID(field, id); err != nil {
			return err
		}
	}
	return nil
}

func jsonOr(raw json.RawMessage, field, empty string) (string, error) {
	if len(raw) == 0 {
		return empty, nil
	}
	if !json.Valid(raw) {
		return "", &InvalidError{field, "is not JSON"}
	}
	return string(raw), nil
}

// PutChatPost records a posted decision and its buttons in one
// transaction. A post stored already gets the new decision, messages,
// again and posted time and keeps its outcome; a token stored already for
// the same decision and option is kept, for another it is an error and
// nothing is written.
func (s *DB) PutChatPost(ctx context.Context, p ChatPost, buttons []ChatButton) error {
	if err := checkChatPost(p, buttons); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("saving chat post %s/%s: %w", p.Platform, p.DecisionID, err)
	}
	defer tx.Rollback()
	if err := s.writeChatPost(ctx, tx, p, buttons); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("saving chat post %s/%s: %w", p.Platform, p.DecisionID, err)
	}
	return nil
}

// UpdateChatPost records the post of platform's decision as update makes
// it from the post stored (found is false when none is), and buttons, as
// PutChatPost does. The read and the write are one transaction that holds
// the post, so a copy another worker adds meanwhile is never lost. When
// update returns false nothing is written.
func (s *DB) UpdateChatPost(ctx context.Context, platform, decisionID string, buttons []ChatButton,
	update func(p *ChatPost, found bool) bool) error {
	if err := checkChat(platform, map[string]string{"decision_id": decisionID}); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("updating chat post %s/%s: %w", platform, decisionID, err)
	}
	defer tx.Rollback()
	// SQLite's transactions here take the write lock when they begin
	// (_txlock=immediate); PostgreSQL locks the row read.
	q := `SELECT ` + chatPostCols + ` FROM chat_posts WHERE platform = ? AND decision_id = ?`
	if s.engine == EnginePostgres {
		q += ` FOR UPDATE`
	}
	p, err := scanChatPost(tx.QueryRowContext(ctx, s.rebind(q), platform, decisionID))
	found := err == nil
	switch {
	case errors.Is(err, sql.ErrNoRows):
		p = ChatPost{Platform: platform, DecisionID: decisionID}
	case err != nil:
		return fmt.Errorf("reading chat post %s/%s: %w", platform, decisionID, err)
	}
	if !update(&p, found) {
		return nil
	}
	if p.Platform != platform || p.DecisionID != decisionID {
		return &InvalidError{"post", "was moved to another platform or decision by its update"}
	}
	if err := checkChatPost(p, buttons); err != nil {
		return err
	}
	if err := s.writeChatPost(ctx, tx, p, buttons); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("updating chat post %s/%s: %w", platform, decisionID, err)
	}
	return nil
}

func checkChatPost(p ChatPost, buttons []ChatButton) error {
	if err := checkChat(p.Platform, map[string]string{"decision_id": p.DecisionID, "subject": p.Subject}); err != nil {
		return err
	}
	if len(p.Decision) == 0 {
		return &InvalidError{"decision", "is required"}
	}
	for field, raw := range map[string]json.RawMessage{"decision": p.Decision, "messages": p.Messages, "again": p.Again} {
		if _, err := jsonOr(raw, field, ""); err != nil {
			return err
		}
	}
	for i, b := range buttons {
		if err := checkID(fmt.Sprintf("buttons[%d].token", i), b.Token); err != nil {
			return err
		}
		if b.Platform != p.Platform || b.DecisionID != p.DecisionID {
			return &InvalidError{fmt.Sprintf("buttons[%d]", i), "belongs to another platform or decision than the post"}
		}
	}
	return nil
}

// writeChatPost writes a checked post and its buttons in tx.
func (s *DB) writeChatPost(ctx context.Context, tx *sql.Tx, p ChatPost, buttons []ChatButton) error {
	msgs, _ := jsonOr(p.Messages, "messages", "[]")
	again, _ := jsonOr(p.Again, "again", "")
	if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO chat_posts (platform, decision_id, subject, decision, messages, again, posted_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (platform, decision_id) DO UPDATE SET subject = excluded.subject, decision = excluded.decision,
			messages = excluded.messages, again = excluded.again, posted_at = excluded.posted_at`),
		p.Platform, p.DecisionID, p.Subject, string(p.Decision), msgs, again, micros(p.PostedAt)); err != nil {
		return fmt.Errorf("saving chat post %s/%s: %w", p.Platform, p.DecisionID, err)
	}
	for _, b := range buttons {
		res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO chat_buttons (token, platform, decision_id, subject, digest, option_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token) DO NOTHING`),
			b.Token, b.Platform, b.DecisionID, b.Subject, b.Digest, b.Option, micros(b.CreatedAt))
		if err != nil {
			return fmt.Errorf("saving chat button of %s/%s: %w", p.Platform, p.DecisionID, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			continue
		}
		var dec, opt string
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT decision_id, option_id FROM chat_buttons WHERE token = ?`), b.Token).Scan(&dec, &opt); err != nil {
			return fmt.Errorf("reading chat button of %s/%s: %w", p.Platform, p.DecisionID, err)
		}
		if dec != b.DecisionID || opt != b.Option {
			return fmt.Errorf("saving chat post %s/%s: a button token is stored already for another decision or option", p.Platform, p.DecisionID)
		}
	}
	return nil
}

// CloseChatPost records a decision's outcome and its messages as edited.
// A post never stored is left alone.
func (s *DB) CloseChatPost(ctx context.Context, platform, decisionID string, messages, outcome json.RawMessage, at time.Time) error {
	if err := checkChat(platform, map[string]string{"decision_id": decisionID}); err != nil {
		return err
	}
	msgs, err := jsonOr(messages, "messages", "[]")
	if err != nil {
		return err
	}
	out, err := jsonOr(outcome, "outcome", "")
	if err != nil {
		return err
	}
	if out == "" {
		return &InvalidError{"outcome", "is required"}
	}
	if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE chat_posts SET messages = ?, outcome = ?, closed_at = ?
		WHERE platform = ? AND decision_id = ?`), msgs, out, micros(at), platform, decisionID); err != nil {
		return fmt.Errorf("closing chat post %s/%s: %w", platform, decisionID, err)
	}
	return nil
}

const chatPostCols = `platform, decision_id, subject, decision, messages, again, outcome, posted_at, closed_at`

func scanChatPost(sc scanner) (ChatPost, error) {
	var (
		p                  ChatPost
		dec, msgs, again   string
		out                string
		postedAt, closedAt int64
	)
	if err := sc.Scan(&p.Platform, &p.DecisionID, &p.Subject, &dec, &msgs, &again, &out, &postedAt, &closedAt); err != nil {
		return p, err
	}
	p.Decision, p.Messages = json.RawMessage(dec), json.RawMessage(msgs)
	if again != "" {
		p.Again = json.RawMessage(again)
	}
	if out != "" {
		p.Outcome = json.RawMessage(out)
	}
	p.PostedAt = fromMicros(postedAt)
	if closedAt != 0 {
		p.ClosedAt = fromMicros(closedAt)
	}
	return p, nil
}

// ChatPost is the post of a decision; ErrNotFound when there is none.
func (s *DB) ChatPost(ctx context.Context, platform, decisionID string) (ChatPost, error) {
	p, err := scanChatPost(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+chatPostCols+` FROM chat_posts
		WHERE platform = ? AND decision_id = ?`), platform, decisionID))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return p, fmt.Errorf("chat post %s/%s: %w", platform, decisionID, ErrNotFound)
	case err != nil:
		return p, fmt.Errorf("reading chat post %s/%s: %w", platform, decisionID, err)
	}
	return p, nil
}

// ChatButton is what a token of platform stands for, and the post of its
// decision; ErrNotFound when either is unknown.
func (s *DB) ChatButton(ctx context.Context, platform, token string) (ChatButton, ChatPost, error) {
	b := ChatButton{Token: token, Platform: platform}
	var created int64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT decision_id, subject, digest, option_id, created_at FROM chat_buttons
		WHERE token = ? AND platform = ?`), token, platform).Scan(&b.DecisionID, &b.Subject, &b.Digest, &b.Option, &created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return b, ChatPost{}, fmt.Errorf("chat button of %s: %w", platform, ErrNotFound)
	case err != nil:
		return b, ChatPost{}, fmt.Errorf("reading chat button of %s: %w", platform, err)
	}
	b.CreatedAt = fromMicros(created)
	p, err := s.ChatPost(ctx, platform, b.DecisionID)
	return b, p, err
}

// ChatButtons are the buttons of platform's decision, oldest first.
func (s *DB) ChatButtons(ctx context.Context, platform, decisionID string) ([]ChatButton, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT token, decision_id, subject, digest, option_id, created_at FROM chat_buttons
		WHERE platform = ? AND decision_id = ? ORDER BY created_at, token`), platform, decisionID)
	if err != nil {
		return nil, fmt.Errorf("reading chat buttons of %s/%s: %w", platform, decisionID, err)
	}
	defer rows.Close()
	var out []ChatButton
	for rows.Next() {
		b := ChatButton{Platform: platform}
		var created int64
		if err := rows.Scan(&b.Token, &b.DecisionID, &b.Subject, &b.Digest, &b.Option, &created); err != nil {
			return nil, fmt.Errorf("reading chat buttons of %s/%s: %w", platform, decisionID, err)
		}
		b.CreatedAt = fromMicros(created)
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading chat buttons of %s/%s: %w", platform, decisionID, err)
	}
	return out, nil
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

// ChatKeep says how long PruneChat keeps what.
type ChatKeep struct {
	// Decided: closed posts and their buttons, after they closed.
	Decided time.Duration
	// Notices: notices, after they were claimed.
	Notices time.Duration
}

// PruneChat drops, for every platform, closed posts and their buttons
// older than keep.Decided, notices older than keep.Notices and expired
// note prompts. Open posts are kept however old.
func (s *DB) PruneChat(ctx context.Context, now time.Time, keep ChatKeep) error {
	if keep.Decided <= 0 || keep.Notices <= 0 {
		return &InvalidError{"keep", "durations must be positive"}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("pruning chat state: %w", err)
	}
	defer tx.Rollback()
	decided := micros(now.Add(-keep.Decided))
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM chat_buttons WHERE EXISTS (SELECT 1 FROM chat_posts p
			WHERE p.platform = chat_buttons.platform AND p.decision_id = chat_buttons.decision_id
			AND p.closed_at <> 0 AND p.closed_at < ?)`, []any{decided}},
		{`DELETE FROM chat_posts WHERE closed_at <> 0 AND closed_at < ?`, []any{decided}},
		{`DELETE FROM chat_notices WHERE claimed_at < ?`, []any{micros(now.Add(-keep.Notices))}},
		{`DELETE FROM chat_notes WHERE expires_at <= ?`, []any{micros(now)}},
	} {
		if _, err := tx.ExecContext(ctx, s.rebind(q.sql), q.args...); err != nil {
			return fmt.Errorf("pruning chat state: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("pruning chat state: %w", err)
	}
	return nil
}
