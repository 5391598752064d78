package ssot

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// SaveDecisions replaces the open decisions of subject, a workflow that
// is not a task (a gate, a lease), so that they are listed with every
// other open decision. rev orders the workflow's saves: a save older than
// the one kept changes nothing, so a retried activity cannot bring back a
// closed decision. Each decision's Subject is set to subject.
func (s *DB) SaveDecisions(ctx context.Context, subject string, rev int64, ds []PendingDecision) error {
	if err := checkID("subject", subject); err != nil {
		return err
	}
	for i := range ds {
		if err := checkID(fmt.Sprintf("decisions[%d].id", i), ds[i].ID); err != nil {
			return err
		}
		if !json.Valid(ds[i].Body) {
			return &InvalidError{fmt.Sprintf("decisions[%d].body", i), "is not JSON"}
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("saving the decisions of %s: %w", subject, err)
	}
	defer tx.Rollback()
	if newer, err := s.claimSave(ctx, tx, subject, rev); err != nil || !newer {
		if err != nil {
			return fmt.Errorf("saving the decisions of %s: %w", subject, err)
		}
		return nil // a newer save is kept
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM pending WHERE subject = ?`), subject); err != nil {
		return fmt.Errorf("saving the decisions of %s: %w", subject, err)
	}
	for _, d := range ds {
		exp := int64(0)
		if !d.ExpiresAt.IsZero() {
			exp = micros(d.ExpiresAt)
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO pending (decision_id, subject, kind, raised_at, expires_at, body) VALUES (?, ?, ?, ?, ?, ?)`),
			d.ID, subject, d.Kind, micros(d.RaisedAt), exp, string(d.Body)); err != nil {
			return fmt.Errorf("saving decision %s of %s: %w", d.ID, subject, err)
		}
	}
	return tx.Commit()
}

// claimSave records rev as the subject's newest save and reports whether
// it is newer than the one kept. A subject's decisions and inbox share
// the one counter.
func (s *DB) claimSave(ctx context.Context, tx *sql.Tx, subject string, rev int64) (bool, error) {
	res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO subjects (subject, rev) VALUES (?, ?)
		ON CONFLICT (subject) DO UPDATE SET rev = excluded.rev WHERE subjects.rev < excluded.rev`), subject, rev)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// SaveOutbox replaces the messages waiting in agents' inboxes for
// subject, a workflow that is not a task but speaks AMP to an agent (an
// AOF task's review by the reviewer agent), so that pull agents find them
// in their inbox. rev orders the saves as in SaveDecisions, with which it
// shares the subject's counter: a workflow uses one or the other.
func (s *DB) SaveOutbox(ctx context.Context, subject string, rev int64, msgs []OutboxMessage) error {
	if err := checkID("subject", subject); err != nil {
		return err
	}
	for i, m := range msgs {
		if err := checkID(fmt.Sprintf("outbox[%d].msg_id", i), m.MsgID); err != nil {
			return err
		}
		if m.Role == "" || !json.Valid(m.Body) {
			return &InvalidError{fmt.Sprintf("outbox[%d]", i), "needs a role and a JSON body"}
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("saving the inbox messages of %s: %w", subject, err)
	}
	defer tx.Rollback()
	if newer, err := s.claimSave(ctx, tx, subject, rev); err != nil || !newer {
		if err != nil {
			return fmt.Errorf("saving the inbox messages of %s: %w", subject, err)
		}
		return nil
	}
	if err := s.replaceOutbox(ctx, tx, subject, msgs); err != nil {
		return fmt.Errorf("saving the inbox messages of %s: %w", subject, err)
	}
	return tx.Commit()
}
