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
