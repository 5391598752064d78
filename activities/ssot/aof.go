package ssot

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// AOFTask is the saved state of one AOF/1 task.
type AOFTask struct {
	TaskID       string    `json:"taskId"`
	Status       string    `json:"status"`
	ParentTaskID string    `json:"parentTaskId,omitempty"`
	Rev          int64     `json:"rev"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
	// Body is the task as its workflow describes it.
	Body json.RawMessage `json:"body"`
}

// AOFArtifact is one file of an AOF task: a run artifact (run.json,
// run_heartbeat.json, run_result.json) or a handoff input
// (inputs/handoff.json, inputs/handoff.md).
type AOFArtifact struct {
	TaskID string `json:"taskId"`
	Name   string `json:"name"`
	Rev    int64  `json:"rev"`
	Body   string `json:"body"`
	// Deleted removes the artifact (a new run drops the last run's
	// result).
	Deleted bool `json:"deleted,omitempty"`
}

// AOFEvent is one event of the AOF/1 protocol log.
type AOFEvent struct {
	Seq     int64           `json:"seq"`
	ID      string          `json:"id"`
	TaskID  string          `json:"taskId,omitempty"`
	Type    string          `json:"type"`
	Actor   string          `json:"actor"`
	At      time.Time       `json:"timestamp"`
	Payload json.RawMessage `json:"payload"`
}

// AOFSave is what one step of an AOF task writes, in one transaction.
type AOFSave struct {
	// Task replaces the saved task unless a newer Rev is saved already.
	Task *AOFTask
	// Artifacts are written unless a newer Rev of each is saved already.
	Artifacts []AOFArtifact
	// Events are appended once each: an id saved already is kept.
	Events []AOFEvent
}

// SaveAOF writes an AOF task's step. A retried save changes nothing.
func (s *DB) SaveAOF(ctx context.Context, in AOFSave) error {
	if t := in.Task; t != nil {
		if err := checkID("task.taskId", t.TaskID); err != nil {
			return err
		}
		if !json.Valid(t.Body) {
			return &InvalidError{"task.body", "is not JSON"}
		}
	}
	for i, a := range in.Artifacts {
		if err := checkID(fmt.Sprintf("artifacts[%d].taskId", i), a.TaskID); err != nil {
			return err
		}
		if err := checkID(fmt.Sprintf("artifacts[%d].name", i), a.Name); err != nil {
			return err
		}
	}
	for i, e := range in.Events {
		if err := checkID(fmt.Sprintf("events[%d].id", i), e.ID); err != nil {
			return err
		}
		if e.Type == "" {
			return &InvalidError{fmt.Sprintf("events[%d].type", i), "is required"}
		}
		if !json.Valid(e.Payload) {
			return &InvalidError{fmt.Sprintf("events[%d].payload", i), "is not JSON"}
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("saving an AOF step: %w", err)
	}
	defer tx.Rollback()
	if t := in.Task; t != nil {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO aof_tasks (task_id, status, parent_task_id, rev, created_at, updated_at, body)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (task_id) DO UPDATE SET status = excluded.status, parent_task_id = excluded.parent_task_id,
				rev = excluded.rev, updated_at = excluded.updated_at, body = excluded.body
			WHERE aof_tasks.rev < excluded.rev`),
			t.TaskID, t.Status, t.ParentTaskID, t.Rev, micros(t.CreatedAt), micros(t.UpdatedAt), string(t.Body)); err != nil {
			return fmt.Errorf("saving AOF task %s: %w", t.TaskID, err)
		}
	}
	for _, a := range in.Artifacts {
		if a.Deleted {
			_, err = tx.ExecContext(ctx, s.rebind(`DELETE FROM aof_artifacts WHERE task_id = ? AND name = ? AND rev < ?`), a.TaskID, a.Name, a.Rev)
		} else {
			_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO aof_artifacts (task_id, name, rev, body) VALUES (?, ?, ?, ?)
				ON CONFLICT (task_id, name) DO UPDATE SET rev = excluded.rev, body = excluded.body
				WHERE aof_artifacts.rev < excluded.rev`), a.TaskID, a.Name, a.Rev, a.Body)
		}
		if err != nil {
			return fmt.Errorf("saving artifact %s of AOF task %s: %w", a.Name, a.TaskID, err)
		}
	}
	for _, e := range in.Events {
		at := e.At
		if at.IsZero() {
			at = time.Now()
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO aof_events (id, task_id, type, actor, at, payload) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`), e.ID, e.TaskID, e.Type, e.Actor, micros(at), string(e.Payload)); err != nil {
			return fmt.Errorf("logging AOF event %s: %w", e.ID, err)
		}
	}
	return tx.Commit()
}

// AOFTask returns an AOF task's saved state; ErrNotFound (wrapped) when
// none is saved.
func (s *DB) AOFTask(ctx context.Context, taskID string) (AOFTask, error) {
	var t AOFTask
	var created, updated int64
	var body string
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT task_id, status, parent_task_id, rev, created_at, updated_at, body
		FROM aof_tasks WHERE task_id = ?`), taskID).Scan(&t.TaskID, &t.Status, &t.ParentTaskID, &t.Rev, &created, &updated, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("AOF task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("reading AOF task %s: %w", taskID, err)
	}
	t.CreatedAt, t.UpdatedAt, t.Body = fromMicros(created), fromMicros(updated), json.RawMessage(body)
	return t, nil
}

// AOFTasks lists AOF tasks in a status (every status when empty), by id.
func (s *DB) AOFTasks(ctx context.Context, status string, p Page) ([]AOFTask, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT task_id, status, parent_task_id, rev, created_at, updated_at, body
		FROM aof_tasks WHERE (? = '' OR status = ?) AND task_id > ? ORDER BY task_id LIMIT ?`), status, status, p.Cursor, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("listing AOF tasks: %w", err)
	}
	defer rows.Close()
	var out []AOFTask
	for rows.Next() {
		var t AOFTask
		var created, updated int64
		var body string
		if err := rows.Scan(&t.TaskID, &t.Status, &t.ParentTaskID, &t.Rev, &created, &updated, &body); err != nil {
			return nil, "", fmt.Errorf("listing AOF tasks: %w", err)
		}
		t.CreatedAt, t.UpdatedAt, t.Body = fromMicros(created), fromMicros(updated), json.RawMessage(body)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("listing AOF tasks: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].TaskID
	}
	return out, next, nil
}

// AOFArtifacts returns an AOF task's artifacts by name.
func (s *DB) AOFArtifacts(ctx context.Context, taskID string) ([]AOFArtifact, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT task_id, name, rev, body FROM aof_artifacts WHERE task_id = ? ORDER BY name`), taskID)
	if err != nil {
		return nil, fmt.Errorf("reading the artifacts of AOF task %s: %w", taskID, err)
	}
	defer rows.Close()
	out := []AOFArtifact{}
	for rows.Next() {
		var a AOFArtifact
		if err := rows.Scan(&a.TaskID, &a.Name, &a.Rev, &a.Body); err != nil {
			return nil, fmt.Errorf("reading the artifacts of AOF task %s: %w", taskID, err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AOFEvents lists logged AOF events in order, of one task or of all when
// taskID is empty; next is empty on the last page.
func (s *DB) AOFEvents(ctx context.Context, taskID string, p Page) ([]AOFEvent, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	after := int64(0)
	if p.Cursor != "" {
		n, err := strconv.ParseInt(p.Cursor, 10, 64)
		if err != nil || n < 0 {
			return nil, "", &InvalidError{"cursor", "is not a cursor of this listing"}
		}
		after = n
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT seq, id, task_id, type, actor, at, payload FROM aof_events
		WHERE (? = '' OR task_id = ?) AND seq > ? ORDER BY seq LIMIT ?`), taskID, taskID, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("reading AOF events: %w", err)
	}
	defer rows.Close()
	out := []AOFEvent{}
	for rows.Next() {
		var e AOFEvent
		var at int64
		var payload string
		if err := rows.Scan(&e.Seq, &e.ID, &e.TaskID, &e.Type, &e.Actor, &at, &payload); err != nil {
			return nil, "", fmt.Errorf("reading AOF events: %w", err)
		}
		e.At, e.Payload = fromMicros(at), json.RawMessage(payload)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("reading AOF events: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(out[limit-1].Seq, 10)
	}
	return out, next, nil
}

// NextAOFTaskID allocates the next task id of day (YYYY-MM-DD):
// TASK-<day>-NNN, numbered from 001, each number once across every
// worker sharing the store. taken reports ids in use already (created
// with an explicit id); they are skipped.
func (s *DB) NextAOFTaskID(ctx context.Context, day string, taken func(id string) (bool, error)) (string, error) {
	if _, err := time.Parse(time.DateOnly, day); err != nil {
		return "", &InvalidError{"day", "is not YYYY-MM-DD"}
	}
	for range 1000 {
		var n int64
		err := s.db.QueryRowContext(ctx, s.rebind(`INSERT INTO aof_task_ids (day, last) VALUES (?, 1)
			ON CONFLICT (day) DO UPDATE SET last = aof_task_ids.last + 1 RETURNING last`), day).Scan(&n)
		if err != nil {
			return "", fmt.Errorf("allocating an AOF task id for %s: %w", day, err)
		}
		if n > 999 {
			return "", fmt.Errorf("allocating an AOF task id for %s: the day's 999 ids are used", day)
		}
		id := fmt.Sprintf("TASK-%s-%03d", day, n)
		if taken == nil {
			return id, nil
		}
		used, err := taken(id)
		if err != nil {
			return "", err
		}
		if !used {
			return id, nil
		}
	}
	return "", fmt.Errorf("allocating an AOF task id for %s: every id tried is taken", day)
}
