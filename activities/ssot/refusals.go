package ssot

import (
	"context"
	"fmt"
)

// TaskRefusals lists the newest refused inputs that name a task, newest
// first, at most limit (up to MaxLimit). The error log has no index on
// the task, so this reads it whole; it is bounded in size.
func (s *DB) TaskRefusals(ctx context.Context, taskID string, limit int) ([]ErrorEntry, error) {
	if limit <= 0 || limit > MaxLimit {
		return nil, &InvalidError{"limit", fmt.Sprintf("must be from 1 to %d", MaxLimit)}
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT seq, recorded_at, source, task_id, reason, raw FROM errors
		WHERE task_id = ? ORDER BY seq DESC LIMIT ?`), taskID, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the refusals of %s: %w", taskID, err)
	}
	defer rows.Close()
	var out []ErrorEntry
	for rows.Next() {
		var e ErrorEntry
		var us int64
		if err := rows.Scan(&e.Seq, &us, &e.Source, &e.TaskID, &e.Reason, &e.Raw); err != nil {
			return nil, fmt.Errorf("reading the refusals of %s: %w", taskID, err)
		}
		e.RecordedAt = fromMicros(us)
		out = append(out, e)
	}
	return out, rows.Err()
}

// RefusalsAfter lists the tasks named by refused inputs kept after seq,
// each once, at most MaxLimit of them.
func (s *DB) RefusalsAfter(ctx context.Context, seq int64) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT DISTINCT task_id FROM errors WHERE seq > ? AND task_id <> '' LIMIT ?`), seq, MaxLimit)
	if err != nil {
		return nil, fmt.Errorf("reading refusals after #%d: %w", seq, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("reading refusals after #%d: %w", seq, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
