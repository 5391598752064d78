package ssot

import (
	"context"
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
	res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO subjects (subject, rev) VALUES (?, ?)
		ON CONFLICT (subject) DO UPDATE SET rev = excluded.rev WHERE subjects.rev < excluded.rev`), subject, rev)
	if err != nil {
		return fmt.Errorf("saving the decisions of %s: %w", subject, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // a newer save is kept
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
