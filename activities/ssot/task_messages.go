package ssot

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The kinds of TaskMessage.
const (
	// TaskMessageSay is a message for the task's running agent, given to
	// it as a user turn.
	TaskMessageSay = "message"
	// TaskMessageInterrupt stops the task's running agent, keeping its
	// session; a later message resumes it.
	TaskMessageInterrupt = "interrupt"
)

// Bounds on task messages.
const (
	// MaxTaskMessageText is the longest message text, in bytes.
	MaxTaskMessageText = 8 << 10
	// MaxTaskMessages is how many messages and interrupts one task keeps;
	// beyond, AddTaskMessage refuses.
	MaxTaskMessages = 500
)

// TaskMessage is what a person sent a task's running agent: a message
// (Kind TaskMessageSay) or an interrupt. DeliveredAt is zero until the
// agent got it; Run names the delivery that took it (the message id of
// the delivery and the role, "<msg_id>/<role>").
type TaskMessage struct {
	ID          int64     `json:"id"`
	TaskID      string    `json:"task_id"`
	Kind        string    `json:"kind"`
	Sender      string    `json:"sender"`
	Text        string    `json:"text,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	Run         string    `json:"run,omitempty"`
}

// Delivered reports whether the agent got the message.
func (m TaskMessage) Delivered() bool { return !m.DeliveredAt.IsZero() }

// TaskMessageHook is called after a task message is written: once when
// it is sent (DeliveredAt zero) and once when it is delivered. It runs in
// the writer's goroutine and must not block.
type TaskMessageHook func(ctx context.Context, m TaskMessage)

// OnTaskMessage sets the hook called after each write of a task message
// by this process (the API's sends, the worker's deliveries); nil removes
// it.
func (s *DB) OnTaskMessage(h TaskMessageHook) {
	if h == nil {
		s.messageHook.Store(nil)
		return
	}
	s.messageHook.Store(&h)
}

func (s *DB) taskMessageWritten(ctx context.Context, m TaskMessage) {
	if h := s.messageHook.Load(); h != nil {
		(*h)(ctx, m)
	}
}

func (m TaskMessage) check() error {
	if err := checkID("task_id", m.TaskID); err != nil {
		return err
	}
	if err := checkID("sender", m.Sender); err != nil {
		return err
	}
	switch m.Kind {
	case TaskMessageSay:
		if strings.TrimSpace(m.Text) == "" {
			return &InvalidError{"text", "is required"}
		}
	case TaskMessageInterrupt:
	default:
		return &InvalidError{"kind", fmt.Sprintf("is %q; want %s or %s", m.Kind, TaskMessageSay, TaskMessageInterrupt)}
	}
	switch {
	case len(m.Text) > MaxTaskMessageText:
		return &InvalidError{"text", fmt.Sprintf("is %d bytes; at most %d", len(m.Text), MaxTaskMessageText)}
	case !utf8.ValidString(m.Text):
		return &InvalidError{"text", "is not valid UTF-8"}
	}
	return nil
}

// AddTaskMessage keeps m as sent now (or at its CreatedAt) and not yet
// delivered, and returns it with its id. A task keeps at most
// MaxTaskMessages.
func (s *DB) AddTaskMessage(ctx context.Context, m TaskMessage) (TaskMessage, error) {
	if err := m.check(); err != nil {
		return TaskMessage{}, err
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	m.CreatedAt = fromMicros(micros(m.CreatedAt))
	m.DeliveredAt, m.Run = time.Time{}, ""
	var n int
	if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM task_messages WHERE task_id = ?`), m.TaskID).Scan(&n); err != nil {
		return TaskMessage{}, fmt.Errorf("counting the messages of %s: %w", m.TaskID, err)
	}
	if n >= MaxTaskMessages {
		return TaskMessage{}, &InvalidError{"task_id", fmt.Sprintf("task %s has %d messages, the most it keeps", m.TaskID, MaxTaskMessages)}
	}
	err := s.db.QueryRowContext(ctx, s.rebind(`INSERT INTO task_messages (task_id, kind, sender, text, created_at)
		VALUES (?, ?, ?, ?, ?) RETURNING id`), m.TaskID, m.Kind, m.Sender, m.Text, micros(m.CreatedAt)).Scan(&m.ID)
	if err != nil {
		return TaskMessage{}, fmt.Errorf("keeping a %s for %s: %w", m.Kind, m.TaskID, err)
	}
	s.taskMessageWritten(ctx, m)
	return m, nil
}

// TaskMessages reads a task's messages and interrupts, oldest first.
func (s *DB) TaskMessages(ctx context.Context, taskID string) ([]TaskMessage, error) {
	return s.taskMessages(ctx, `task_id = ?`, taskID)
}

// UndeliveredTaskMessages reads a task's messages of kind that no agent
// got yet and whose id is above after, oldest first.
func (s *DB) UndeliveredTaskMessages(ctx context.Context, taskID, kind string, after int64) ([]TaskMessage, error) {
	return s.taskMessages(ctx, `task_id = ? AND kind = ? AND delivered_at = 0 AND id > ?`, taskID, kind, after)
}

// LastTaskMessage is the id of a task's newest message of kind; 0 for
// none.
func (s *DB) LastTaskMessage(ctx context.Context, taskID, kind string) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(MAX(id), 0) FROM task_messages WHERE task_id = ? AND kind = ?`), taskID, kind).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("reading the last %s of %s: %w", kind, taskID, err)
	}
	return id, nil
}

// DeliverTaskMessage marks message id delivered to run at at, unless it
// was delivered already; it reports whether this call marked it, so that
// of two runs that race for a message one gives it to its agent.
func (s *DB) DeliverTaskMessage(ctx context.Context, id int64, run string, at time.Time) (TaskMessage, bool, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE task_messages SET delivered_at = ?, run = ? WHERE id = ? AND delivered_at = 0`),
		micros(at), run, id)
	if err != nil {
		return TaskMessage{}, false, fmt.Errorf("marking task message %d delivered: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return TaskMessage{}, false, fmt.Errorf("marking task message %d delivered: %w", id, err)
	}
	ms, err := s.taskMessages(ctx, `id = ?`, id)
	if err != nil {
		return TaskMessage{}, false, err
	}
	if len(ms) == 0 {
		return TaskMessage{}, false, fmt.Errorf("task message %d: %w", id, ErrNotFound)
	}
	if n == 1 {
		s.taskMessageWritten(ctx, ms[0])
	}
	return ms[0], n == 1, nil
}

func (s *DB) taskMessages(ctx context.Context, cond string, args ...any) ([]TaskMessage, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id, task_id, kind, sender, text, created_at, delivered_at, run
		FROM task_messages WHERE `+cond+` ORDER BY id`), args...)
	if err != nil {
		return nil, fmt.Errorf("reading task messages: %w", err)
	}
	defer rows.Close()
	var out []TaskMessage
	for rows.Next() {
		var m TaskMessage
		var created, delivered int64
		if err := rows.Scan(&m.ID, &m.TaskID, &m.Kind, &m.Sender, &m.Text, &created, &delivered, &m.Run); err != nil {
			return nil, fmt.Errorf("reading task messages: %w", err)
		}
		m.CreatedAt = fromMicros(created)
		if delivered != 0 {
			m.DeliveredAt = fromMicros(delivered)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading task messages: %w", err)
	}
	return out, nil
}
