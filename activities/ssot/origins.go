package ssot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Origin is where a task came from: an item of a tracker (Source, as
// "github"; ExternalID, the item's id there) and a link back to it.
type Origin struct {
	Source     string    `json:"source"`
	ExternalID string    `json:"external_id"`
	TaskID     string    `json:"task_id,omitempty"`
	URL        string    `json:"url,omitempty"`
	ClaimedAt  time.Time `json:"claimed_at"`
}

func (o Origin) check() error {
	if err := checkID("source", o.Source); err != nil {
		return err
	}
	return checkID("external_id", o.ExternalID)
}

// ClaimOrigin keeps o unless its source and external id are kept
// already, and returns the row the store holds: won is true when this
// call wrote it. A row whose TaskID is empty is a claim whose task has
// not started yet (or whose claimant died before it did).
func (s *DB) ClaimOrigin(ctx context.Context, o Origin) (held Origin, won bool, err error) {
	if err := o.check(); err != nil {
		return Origin{}, false, err
	}
	if o.ClaimedAt.IsZero() {
		o.ClaimedAt = time.Now()
	}
	res, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO task_origins (source, external_id, task_id, url, claimed_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (source, external_id) DO NOTHING`),
		o.Source, o.ExternalID, o.TaskID, o.URL, micros(o.ClaimedAt))
	if err != nil {
		return Origin{}, false, fmt.Errorf("claiming %s %s: %w", o.Source, o.ExternalID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Origin{}, false, fmt.Errorf("claiming %s %s: %w", o.Source, o.ExternalID, err)
	}
	held, err = s.Origin(ctx, o.Source, o.ExternalID)
	return held, n == 1, err
}

// SetOriginTask names the task a claim started, unless a task is named
// already, and returns the task the claim holds: taskID, or the one
// another claimant named first.
func (s *DB) SetOriginTask(ctx context.Context, source, externalID, taskID string) (string, error) {
	if err := checkID("task_id", taskID); err != nil {
		return "", err
	}
	if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE task_origins SET task_id = ? WHERE source = ? AND external_id = ? AND task_id = ''`),
		taskID, source, externalID); err != nil {
		return "", fmt.Errorf("naming the task of %s %s: %w", source, externalID, err)
	}
	o, err := s.Origin(ctx, source, externalID)
	return o.TaskID, err
}

// Origin reads the row of a tracker's item; ErrNotFound (wrapped) when
// it has none.
func (s *DB) Origin(ctx context.Context, source, externalID string) (Origin, error) {
	return s.origin(ctx, `source = ? AND external_id = ?`, source, externalID)
}

// OriginOf reads where a task came from; ErrNotFound (wrapped) when it
// came from no tracker.
func (s *DB) OriginOf(ctx context.Context, taskID string) (Origin, error) {
	return s.origin(ctx, `task_id = ?`, taskID)
}

func (s *DB) origin(ctx context.Context, cond string, args ...any) (Origin, error) {
	var o Origin
	var at int64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT source, external_id, task_id, url, claimed_at FROM task_origins WHERE `+cond), args...).
		Scan(&o.Source, &o.ExternalID, &o.TaskID, &o.URL, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Origin{}, fmt.Errorf("origin %v: %w", args, ErrNotFound)
	}
	if err != nil {
		return Origin{}, fmt.Errorf("reading origin %v: %w", args, err)
	}
	o.ClaimedAt = fromMicros(at)
	return o, nil
}

// originsOf reads the origins of tasks, by task id.
func (s *DB) originsOf(ctx context.Context, ids []string) (map[string]Origin, error) {
	out := map[string]Origin{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT source, external_id, task_id, url, claimed_at FROM task_origins
		WHERE task_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`), args...)
	if err != nil {
		return nil, fmt.Errorf("reading the origins of tasks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o Origin
		var at int64
		if err := rows.Scan(&o.Source, &o.ExternalID, &o.TaskID, &o.URL, &at); err != nil {
			return nil, fmt.Errorf("reading the origins of tasks: %w", err)
		}
		o.ClaimedAt = fromMicros(at)
		out[o.TaskID] = o
	}
	return out, rows.Err()
}
