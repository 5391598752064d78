package ssot

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TaskState is what the read side keeps of a task: its latest state and
// what it waits for.
type TaskState struct {
	TaskID string `json:"task_id"`
	// Rev orders the writer's states: a state never replaces one of a
	// higher Rev, so a retried write of an older state changes nothing.
	Rev    int64  `json:"rev"`
	Status string `json:"status"`
	Risk   string `json:"risk,omitempty"`
	Repo   string `json:"repo,omitempty"`
	// RejectCount is how many reviews the task's work has had rejected.
	RejectCount int       `json:"reject_count"`
	StartedAt   time.Time `json:"started_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// State is the writer's whole state, kept as given.
	State json.RawMessage `json:"state"`
	// Origin is where the task came from; TaskList fills it, nil for a
	// task started from no tracker.
	Origin *Origin `json:"origin,omitempty"`
	// Outbox and Pending replace the task's rows; TaskList leaves them out.
	Outbox  []OutboxMessage   `json:"outbox,omitempty"`
	Pending []PendingDecision `json:"pending,omitempty"`
}

// OutboxMessage is a message waiting for an agent's ACK or reply.
type OutboxMessage struct {
	MsgID  string          `json:"msg_id"`
	TaskID string          `json:"task_id"`
	Role   string          `json:"role"`
	Type   string          `json:"type"`
	SentAt time.Time       `json:"sent_at"`
	Body   json.RawMessage `json:"body"`
	// Holder is the agent that ACKed the message and has not answered
	// it yet, AckedAt when; empty while the message awaits an ACK.
	Holder  string    `json:"holder,omitempty"`
	AckedAt time.Time `json:"acked_at,omitzero"`
}

// InboxFilter asks for a role's inbox: the messages that await an ACK
// and, with Holder, those Holder ACKed and has not answered yet; with
// HeldOnly, only the latter.
type InboxFilter struct {
	Role, Holder string
	HeldOnly     bool
}

// PendingDecision is an open decision of any subject (a task, a gate, a
// lease).
type PendingDecision struct {
	ID        string    `json:"id"`
	Subject   string    `json:"subject"`
	Kind      string    `json:"kind"`
	RaisedAt  time.Time `json:"raised_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Body is the decision as its workflow describes it.
	Body json.RawMessage `json:"body"`
}

// TaskFilter narrows TaskList; empty fields match every task. Source
// keeps the tasks that came from that tracker (Origin).
type TaskFilter struct {
	Status, Risk, Repo, Source string
}

func (st *TaskState) check(taskID string) error {
	switch {
	case st.TaskID != taskID:
		return &InvalidError{"state.task_id", fmt.Sprintf("is %q, not the task saved (%s)", st.TaskID, taskID)}
	case st.Status == "":
		return &InvalidError{"state.status", "is required"}
	case !json.Valid(st.State):
		return &InvalidError{"state.state", "is not JSON"}
	}
	for i, m := range st.Outbox {
		if err := checkID(fmt.Sprintf("state.outbox[%d].msg_id", i), m.MsgID); err != nil {
			return err
		}
		if m.Role == "" || !json.Valid(m.Body) {
			return &InvalidError{fmt.Sprintf("state.outbox[%d]", i), "needs a role and a JSON body"}
		}
	}
	for i, d := range st.Pending {
		if err := checkID(fmt.Sprintf("state.pending[%d].id", i), d.ID); err != nil {
			return err
		}
		if !json.Valid(d.Body) {
			return &InvalidError{fmt.Sprintf("state.pending[%d].body", i), "is not JSON"}
		}
	}
	return nil
}

// saveState replaces a task's read rows, unless a newer state is kept. A
// task's started_at stays the one first written (the client's, when it
// writes the first record before the workflow does), so a listing paged
// by it never meets the same task twice.
func (s *DB) saveState(ctx context.Context, tx *sql.Tx, st *TaskState) error {
	res, err := s.txExec(ctx, tx, `INSERT INTO tasks (task_id, rev, status, risk, repo, reject_count, started_at, updated_at, state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET rev = excluded.rev, status = excluded.status, risk = excluded.risk,
			repo = excluded.repo, reject_count = excluded.reject_count,
			updated_at = excluded.updated_at, state = excluded.state
		WHERE tasks.rev < excluded.rev`,
		st.TaskID, st.Rev, st.Status, st.Risk, st.Repo, st.RejectCount, micros(st.StartedAt), micros(st.UpdatedAt), string(st.State))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // a newer state is kept: its rows stay
	}
	if err := s.replaceOutbox(ctx, tx, st.TaskID, st.Outbox); err != nil {
		return err
	}
	if _, err := s.txExec(ctx, tx, `DELETE FROM pending WHERE subject = ?`, st.TaskID); err != nil {
		return err
	}
	for _, d := range st.Pending {
		exp := int64(0)
		if !d.ExpiresAt.IsZero() {
			exp = micros(d.ExpiresAt)
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO pending (decision_id, subject, kind, raised_at, expires_at, body) VALUES (?, ?, ?, ?, ?, ?)`,
			d.ID, st.TaskID, d.Kind, micros(d.RaisedAt), exp, string(d.Body)); err != nil {
			return err
		}
	}
	return nil
}

// replaceOutbox replaces the inbox messages of subject with msgs.
func (s *DB) replaceOutbox(ctx context.Context, tx *sql.Tx, subject string, msgs []OutboxMessage) error {
	if _, err := s.txExec(ctx, tx, `DELETE FROM outbox WHERE task_id = ?`, subject); err != nil {
		return err
	}
	for _, m := range msgs {
		acked := int64(0)
		if !m.AckedAt.IsZero() {
			acked = micros(m.AckedAt)
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO outbox (msg_id, task_id, role, type, sent_at, body, holder, acked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			m.MsgID, subject, m.Role, m.Type, micros(m.SentAt), string(m.Body), m.Holder, acked); err != nil {
			return fmt.Errorf("message %s: %w", m.MsgID, err)
		}
	}
	return nil
}

const taskColumns = `task_id, rev, status, risk, repo, reject_count, started_at, updated_at`

func scanTask(sc scanner, withState bool) (TaskState, error) {
	var t TaskState
	var started, updated int64
	dest := []any{&t.TaskID, &t.Rev, &t.Status, &t.Risk, &t.Repo, &t.RejectCount, &started, &updated}
	var state string
	if withState {
		dest = append(dest, &state)
	}
	if err := sc.Scan(dest...); err != nil {
		return TaskState{}, err
	}
	t.StartedAt, t.UpdatedAt = fromMicros(started), fromMicros(updated)
	if withState {
		t.State = json.RawMessage(state)
	}
	return t, nil
}

// Task implements Chains.
func (s *DB) Task(ctx context.Context, taskID string) (TaskState, error) {
	if err := checkID("task_id", taskID); err != nil {
		return TaskState{}, err
	}
	t, err := scanTask(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+taskColumns+`, state FROM tasks WHERE task_id = ?`), taskID), true)
	if errors.Is(err, sql.ErrNoRows) {
		return TaskState{}, fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return TaskState{}, fmt.Errorf("reading task %s: %w", taskID, err)
	}
	if t.Outbox, _, err = s.outbox(ctx, `task_id = ? AND holder = ''`, []any{taskID}, "", MaxLimit); err != nil {
		return TaskState{}, fmt.Errorf("reading the outbox of task %s: %w", taskID, err)
	}
	if t.Pending, _, err = s.pending(ctx, `subject = ?`, []any{taskID}, "", MaxLimit); err != nil {
		return TaskState{}, fmt.Errorf("reading the decisions of task %s: %w", taskID, err)
	}
	return t, nil
}

// TaskList implements Chains.
func (s *DB) TaskList(ctx context.Context, f TaskFilter, p Page) ([]TaskState, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	q, args, err := newestFirst{columns: taskColumns, table: "tasks", timeCol: "started_at", idCol: "task_id",
		filters: [][2]string{{"status", f.Status}, {"risk", f.Risk}, {"repo", f.Repo},
			{"task_id IN (SELECT task_id FROM task_origins WHERE source = ?)", f.Source}}}.query(p.Cursor, limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, "", fmt.Errorf("listing tasks: %w", err)
	}
	defer rows.Close()
	var out []TaskState
	for rows.Next() {
		t, err := scanTask(rows, false)
		if err != nil {
			return nil, "", fmt.Errorf("listing tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("listing tasks: %w", err)
	}
	out, next := cutPage(out, limit, func(t TaskState) string { return keyCursor(micros(t.StartedAt), t.TaskID) })
	ids := make([]string, len(out))
	for i, t := range out {
		ids[i] = t.TaskID
	}
	origins, err := s.originsOf(ctx, ids)
	if err != nil {
		return nil, "", err
	}
	for i := range out {
		if o, ok := origins[out[i].TaskID]; ok {
			out[i].Origin = &o
		}
	}
	return out, next, nil
}

// Inbox implements Chains.
func (s *DB) Inbox(ctx context.Context, role string, p Page) ([]OutboxMessage, string, error) {
	return s.InboxOf(ctx, InboxFilter{Role: role}, p)
}

// InboxOf lists a role's inbox as f asks, oldest first.
func (s *DB) InboxOf(ctx context.Context, f InboxFilter, p Page) ([]OutboxMessage, string, error) {
	if f.Role == "" {
		return nil, "", &InvalidError{"role", "is required"}
	}
	if f.HeldOnly && f.Holder == "" {
		return nil, "", &InvalidError{"holder", "is required for the held messages alone"}
	}
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	cond, args := `role = ? AND holder = ''`, []any{f.Role}
	switch {
	case f.HeldOnly:
		cond, args = `role = ? AND holder = ?`, []any{f.Role, f.Holder}
	case f.Holder != "":
		cond, args = `role = ? AND holder IN ('', ?)`, []any{f.Role, f.Holder}
	}
	msgs, next, err := s.outbox(ctx, cond, args, p.Cursor, limit)
	if err != nil {
		return nil, "", fmt.Errorf("reading the %s inbox: %w", f.Role, err)
	}
	return msgs, next, nil
}

func (s *DB) outbox(ctx context.Context, cond string, args []any, cursor string, limit int) ([]OutboxMessage, string, error) {
	if cursor != "" {
		at, id, err := decodeKeyCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		cond += " AND (sent_at > ? OR (sent_at = ? AND msg_id > ?))"
		args = append(args, at, at, id)
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT msg_id, task_id, role, type, sent_at, body, holder, acked_at FROM outbox
		WHERE `+cond+` ORDER BY sent_at, msg_id LIMIT ?`), append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []OutboxMessage
	for rows.Next() {
		var m OutboxMessage
		var at, acked int64
		var body string
		if err := rows.Scan(&m.MsgID, &m.TaskID, &m.Role, &m.Type, &at, &body, &m.Holder, &acked); err != nil {
			return nil, "", err
		}
		m.SentAt, m.Body = fromMicros(at), json.RawMessage(body)
		if acked != 0 {
			m.AckedAt = fromMicros(acked)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := cutPage(out, limit, func(m OutboxMessage) string { return keyCursor(micros(m.SentAt), m.MsgID) })
	return out, next, nil
}

// Pending implements Chains.
func (s *DB) Pending(ctx context.Context, p Page) ([]PendingDecision, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	ds, next, err := s.pending(ctx, "1 = 1", nil, p.Cursor, limit)
	if err != nil {
		return nil, "", fmt.Errorf("listing open decisions: %w", err)
	}
	return ds, next, nil
}

func (s *DB) pending(ctx context.Context, cond string, args []any, cursor string, limit int) ([]PendingDecision, string, error) {
	if cursor != "" {
		at, id, err := decodeKeyCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		cond += " AND (raised_at > ? OR (raised_at = ? AND decision_id > ?))"
		args = append(args, at, at, id)
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT decision_id, subject, kind, raised_at, expires_at, body FROM pending
		WHERE `+cond+` ORDER BY raised_at, decision_id LIMIT ?`), append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []PendingDecision
	for rows.Next() {
		var d PendingDecision
		var raised, exp int64
		var body string
		if err := rows.Scan(&d.ID, &d.Subject, &d.Kind, &raised, &exp, &body); err != nil {
			return nil, "", err
		}
		d.RaisedAt, d.Body = fromMicros(raised), json.RawMessage(body)
		if exp != 0 {
			d.ExpiresAt = fromMicros(exp)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := cutPage(out, limit, func(d PendingDecision) string { return keyCursor(micros(d.RaisedAt), d.ID) })
	return out, next, nil
}

// keyCursor marks a place in a listing ordered by a time and an id.
func keyCursor(at int64, id string) string {
	return encodeCursor(strconv.FormatInt(at, 10) + "/" + id)
}

func decodeKeyCursor(c string) (int64, string, error) {
	s, err := decodeCursor(c)
	if err != nil {
		return 0, "", err
	}
	at, id, ok := strings.Cut(s, "/")
	n, perr := strconv.ParseInt(at, 10, 64)
	if !ok || perr != nil || id == "" {
		return 0, "", &InvalidError{"cursor", "is not a cursor this store returned"}
	}
	return n, id, nil
}

// newestFirst is the query of a page of a listing newest first: the rows
// of table whose columns equal the filters that are set, after cursor on
// (timeCol, idCol), limit+1 of them so the caller knows whether more
// follow.
type newestFirst struct {
	columns, table, timeCol, idCol string
	// filters are column = value conditions, or conditions with one ?
	// for the value; an empty value is no filter.
	filters [][2]string
}

func (l newestFirst) query(cursor string, limit int) (string, []any, error) {
	var where []string
	var args []any
	for _, f := range l.filters {
		if f[1] != "" && strings.Contains(f[0], "?") {
			where = append(where, f[0])
			args = append(args, f[1])
		} else if f[1] != "" {
			where = append(where, f[0]+" = ?")
			args = append(args, f[1])
		}
	}
	if cursor != "" {
		at, id, err := decodeKeyCursor(cursor)
		if err != nil {
			return "", nil, err
		}
		where = append(where, fmt.Sprintf("(%[1]s < ? OR (%[1]s = ? AND %[2]s < ?))", l.timeCol, l.idCol))
		args = append(args, at, at, id)
	}
	q := `SELECT ` + l.columns + ` FROM ` + l.table
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += fmt.Sprintf(" ORDER BY %s DESC, %s DESC LIMIT ?", l.timeCol, l.idCol)
	return q, append(args, limit+1), nil
}

// OpenSubjects lists the subjects with open decisions or messages in an
// inbox: what a sweep checks against the workflows that still run.
func (s *DB) OpenSubjects(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT subject FROM pending UNION SELECT task_id FROM outbox`)
	if err != nil {
		return nil, fmt.Errorf("listing open subjects: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("listing open subjects: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ClearOpen removes the open decisions and inbox messages of a subject
// whose workflow has ended without saying so (terminated in Temporal by
// hand, say), and marks its task ended with status unless it ended
// already. Records are never touched.
func (s *DB) ClearOpen(ctx context.Context, subject, status string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{`DELETE FROM pending WHERE subject = ?`, `DELETE FROM outbox WHERE task_id = ?`} {
		if _, err := tx.ExecContext(ctx, s.rebind(q), subject); err != nil {
			return fmt.Errorf("clearing %s: %w", subject, err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE tasks SET status = ? WHERE task_id = ? AND status NOT IN ('done', 'terminated')`), status, subject); err != nil {
		return fmt.Errorf("clearing %s: %w", subject, err)
	}
	return tx.Commit()
}
