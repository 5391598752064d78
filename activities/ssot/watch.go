package ssot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Marks is what changes of the store a watcher compares from one look to
// the next: each chain's head, each task's state revision and status, and
// the open decisions. Every worker writes the same tables, so a watcher
// sees the changes of all of them.
type Marks struct {
	// Heads maps a task id to its chain's last seq.
	Heads map[string]int64
	// Tasks maps a task id to its state's revision and status.
	Tasks map[string]TaskMark
	// Pending maps an open decision's id to its subject.
	Pending map[string]string
	// Subjects maps a workflow that is not a task (a gate, a lease) to
	// the revision of its last save of open decisions (SaveDecisions).
	Subjects map[string]int64
	// Refusals is the seq of the newest refused input kept.
	Refusals int64
	// Mesh is the seq of the newest mesh event; every change of a lease
	// writes one, so it marks the leases too.
	Mesh int64
}

// TaskMark is a task's state revision and status.
type TaskMark struct {
	Rev    int64
	Status string
}

// Marks reads the marks of every task, open decision and other subject,
// the newest refusal and the newest mesh event: four narrow-column scans
// and two key lookups, no bodies.
func (s *DB) Marks(ctx context.Context) (Marks, error) {
	m := Marks{Heads: map[string]int64{}, Tasks: map[string]TaskMark{}, Pending: map[string]string{}, Subjects: map[string]int64{}}
	rows, err := s.db.QueryContext(ctx, `SELECT task_id, seq FROM chains`)
	if err != nil {
		return Marks{}, fmt.Errorf("reading chain heads: %w", err)
	}
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			rows.Close()
			return Marks{}, fmt.Errorf("reading chain heads: %w", err)
		}
		m.Heads[id] = seq
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Marks{}, fmt.Errorf("reading chain heads: %w", err)
	}
	if rows, err = s.db.QueryContext(ctx, `SELECT task_id, rev, status FROM tasks`); err != nil {
		return Marks{}, fmt.Errorf("reading task revisions: %w", err)
	}
	for rows.Next() {
		var id string
		var t TaskMark
		if err := rows.Scan(&id, &t.Rev, &t.Status); err != nil {
			rows.Close()
			return Marks{}, fmt.Errorf("reading task revisions: %w", err)
		}
		m.Tasks[id] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Marks{}, fmt.Errorf("reading task revisions: %w", err)
	}
	if rows, err = s.db.QueryContext(ctx, `SELECT decision_id, subject FROM pending`); err != nil {
		return Marks{}, fmt.Errorf("reading open decisions: %w", err)
	}
	for rows.Next() {
		var id, subject string
		if err := rows.Scan(&id, &subject); err != nil {
			rows.Close()
			return Marks{}, fmt.Errorf("reading open decisions: %w", err)
		}
		m.Pending[id] = subject
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Marks{}, fmt.Errorf("reading open decisions: %w", err)
	}
	if rows, err = s.db.QueryContext(ctx, `SELECT subject, rev FROM subjects`); err != nil {
		return Marks{}, fmt.Errorf("reading subjects: %w", err)
	}
	for rows.Next() {
		var subject string
		var rev int64
		if err := rows.Scan(&subject, &rev); err != nil {
			rows.Close()
			return Marks{}, fmt.Errorf("reading subjects: %w", err)
		}
		m.Subjects[subject] = rev
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Marks{}, fmt.Errorf("reading subjects: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM errors`).Scan(&m.Refusals); err != nil {
		return Marks{}, fmt.Errorf("reading the newest refusal: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM mesh_events`).Scan(&m.Mesh); err != nil {
		return Marks{}, fmt.Errorf("reading the newest mesh event: %w", err)
	}
	return m, nil
}

// TaskStates reads the saved states of the tasks named, in one query; a
// task without a state is left out of the map.
func (s *DB) TaskStates(ctx context.Context, ids []string) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	if len(ids) > MaxLimit {
		return nil, &InvalidError{"ids", fmt.Sprintf("at most %d at a time", MaxLimit)}
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	q := `SELECT task_id, state FROM tasks WHERE task_id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("reading the states of %d tasks: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			return nil, fmt.Errorf("reading the states of %d tasks: %w", len(ids), err)
		}
		out[id] = json.RawMessage(state)
	}
	return out, rows.Err()
}
