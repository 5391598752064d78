package ssot

import (
	"context"
	"fmt"
	"time"
)

// WorktreeMark is a runner checkout ampflow is removing.
type WorktreeMark struct {
	Path     string    `json:"path"`
	TaskID   string    `json:"task_id"`
	Repo     string    `json:"repo,omitempty"`
	MarkedAt time.Time `json:"marked_at"`
}

// MarkWorktree records that the checkout at m.Path is being removed; a
// mark kept already stays as it was.
func (s *DB) MarkWorktree(ctx context.Context, m WorktreeMark) error {
	if m.Path == "" {
		return fmt.Errorf("marking a worktree: path is empty")
	}
	if err := checkID("task_id", m.TaskID); err != nil {
		return err
	}
	if m.MarkedAt.IsZero() {
		m.MarkedAt = time.Now()
	}
	if _, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO worktree_marks (path, task_id, repo, marked_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (path) DO NOTHING`), m.Path, m.TaskID, m.Repo, micros(m.MarkedAt)); err != nil {
		return fmt.Errorf("marking worktree %s of %s: %w", m.Path, m.TaskID, err)
	}
	return nil
}

// WorktreeMarked reports whether the checkout at path is marked as being
// removed.
func (s *DB) WorktreeMarked(ctx context.Context, path string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM worktree_marks WHERE path = ?`), path).Scan(&n); err != nil {
		return false, fmt.Errorf("reading the mark of worktree %s: %w", path, err)
	}
	return n > 0, nil
}

// UnmarkWorktree forgets the mark of a checkout that is gone.
func (s *DB) UnmarkWorktree(ctx context.Context, path string) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM worktree_marks WHERE path = ?`), path); err != nil {
		return fmt.Errorf("unmarking worktree %s: %w", path, err)
	}
	return nil
}

// MarkedWorktrees lists the checkouts whose removal has not finished,
// oldest first, at most limit of them.
func (s *DB) MarkedWorktrees(ctx context.Context, limit int) ([]WorktreeMark, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT path, task_id, repo, marked_at FROM worktree_marks ORDER BY marked_at, path LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("listing marked worktrees: %w", err)
	}
	defer rows.Close()
	var out []WorktreeMark
	for rows.Next() {
		var m WorktreeMark
		var at int64
		if err := rows.Scan(&m.Path, &m.TaskID, &m.Repo, &at); err != nil {
			return nil, fmt.Errorf("listing marked worktrees: %w", err)
		}
		m.MarkedAt = fromMicros(at)
		out = append(out, m)
	}
	return out, rows.Err()
}
