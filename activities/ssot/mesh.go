package ssot

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MeshEvent is one event of the agent mesh: a message between agents or
// an event the system emits. Its wire form lives in integrations/repomesh;
// the store keeps the fields it filters on in columns and the whole
// payload as JSON.
type MeshEvent struct {
	Seq       int64
	ID        string
	Type      string
	Severity  string
	AgentID   string
	From      string
	FromID    string
	To        string
	Subject   string
	Content   string
	ParentID  string
	ThreadID  string
	TaskID    string
	Channel   string
	CreatedAt time.Time
	// Payload is the event's payload, a JSON object.
	Payload json.RawMessage
	// Deliver names the inboxes the event goes to besides To's
	// (the agents it mentions).
	Deliver []string
	ReadBy  []ReadReceipt
}

// ReadReceipt is one agent having read an event.
type ReadReceipt struct {
	AgentID string    `json:"agent_id"`
	ReadAt  time.Time `json:"read_at"`
}

// Broadcast is the recipient of a message to every agent.
const Broadcast = "all"

// SystemEventPrefix begins the id of every event the system stores
// itself (lease changes, tasks' events, replies to agents): the API
// refuses it in a post, so no agent takes a system event's id first.
const SystemEventPrefix = "ampflow-"

// MeshSender is the name the system's own mesh events come from.
const MeshSender = "ampflow"

// ErrEventIDTaken is returned (wrapped) when an event's id is stored
// already under another sender: an id is its sender's, and the stored
// event is not answered to anyone else.
var ErrEventIDTaken = errors.New("event id taken by another sender")

// MaxThread bounds the events a thread read returns.
const MaxThread = MaxLimit

// InboxQuery asks for an agent's inbox: events to any of Recipients (its
// name and id), and broadcasts when Broadcast is set.
type InboxQuery struct {
	Recipients []string
	Broadcast  bool
	// Since keeps events stored after it; zero keeps all.
	Since   time.Time
	Desc    bool
	Channel string
}

// SearchQuery filters events; empty fields match all. Q is keywords, all
// of which must be in the subject or content.
type SearchQuery struct {
	From, To, Type, TaskID string
	Since, Until           time.Time
	Q                      string
	// Viewers, when set, keeps the events one of them may read: those it
	// sent or posted, was sent or mentioned in, broadcasts, and events
	// addressed to nobody (the tasks' own). Empty keeps all (an admin's
	// search).
	Viewers []string
}

// AppendEvent stores an event. An event whose id is stored already by
// the same sender (From and AgentID) is answered as stored (a retry); by
// another, it is ErrEventIDTaken and nothing of the stored one. A ParentID must name a stored event; the
// new event joins its thread.
func (s *DB) AppendEvent(ctx context.Context, e MeshEvent) (MeshEvent, error) {
	var out MeshEvent
	err := s.meshTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = s.appendEvent(ctx, tx, e)
		return err
	})
	if err != nil {
		return MeshEvent{}, fmt.Errorf("storing event %s: %w", e.ID, err)
	}
	return out, nil
}

// AppendEvents stores events in one transaction, each as AppendEvent
// does (one stored already by its sender is kept; by another, the
// transaction fails with ErrEventIDTaken).
func (s *DB) AppendEvents(ctx context.Context, evs []MeshEvent) error {
	if len(evs) == 0 {
		return nil
	}
	err := s.meshTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, e := range evs {
			if _, err := s.appendEvent(ctx, tx, e); err != nil {
				return fmt.Errorf("event %s: %w", e.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storing %d events: %w", len(evs), err)
	}
	return nil
}

// meshTx runs fn in a transaction: on SQLite in the group writer's next
// commit (one sync for every write queued meanwhile), on PostgreSQL in
// one of its own.
func (s *DB) meshTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if s.group != nil {
		_, err := s.group.do(ctx, &groupSave{ctx: ctx, done: make(chan struct{}),
			fn: func(ctx context.Context, tx *sql.Tx) (AppendResult, bool, error) {
				return AppendResult{}, true, fn(ctx, tx)
			}})
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// insertEvent inserts e unless its id is taken, setting e.Seq when it
// does. SQLite gives the row's seq as the last insert id: its RETURNING
// would gather the row in a temporary table, with a page cache of its own
// allocated and freed on every insert.
func (s *DB) insertEvent(ctx context.Context, tx *sql.Tx, e *MeshEvent) (bool, error) {
	const insert = `INSERT INTO mesh_events (id, type, severity, agent_id, sender, sender_id,
		recipient, subject, content, parent_id, thread_id, task_id, channel, created_at, payload)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`
	args := []any{e.ID, e.Type, e.Severity, e.AgentID, e.From, e.FromID, e.To, e.Subject, e.Content, e.ParentID, e.ThreadID,
		e.TaskID, e.Channel, micros(e.CreatedAt), string(e.Payload)}
	if s.engine == EngineSQLite {
		res, err := s.txExec(ctx, tx, insert, args...)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return false, err
		}
		e.Seq, err = res.LastInsertId()
		return err == nil, err
	}
	rows, err := s.txQuery(ctx, tx, insert+" RETURNING seq", args...)
	if err != nil {
		return false, err
	}
	inserted := rows.Next()
	if inserted {
		err = rows.Scan(&e.Seq)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	return inserted && err == nil, err
}

func (s *DB) appendEvent(ctx context.Context, tx *sql.Tx, e MeshEvent) (MeshEvent, error) {
	if err := checkID("id", e.ID); err != nil {
		return MeshEvent{}, err
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = time.Now()
	}
	e.CreatedAt = fromMicros(micros(e.CreatedAt))
	if len(e.Payload) == 0 {
		e.Payload = json.RawMessage(`{}`)
	}
	if !json.Valid(e.Payload) {
		return MeshEvent{}, &InvalidError{"payload", "is not JSON"}
	}
	e.ThreadID = e.ID
	if e.ParentID != "" {
		err := s.txQueryRow(ctx, tx, `SELECT thread_id FROM mesh_events WHERE id = ?`, e.ParentID).Scan(&e.ThreadID)
		if errors.Is(err, sql.ErrNoRows) {
			return MeshEvent{}, &InvalidError{"payload.parent_message_id", "names no stored event: " + e.ParentID}
		}
		if err != nil {
			return MeshEvent{}, err
		}
	}
	inserted, err := s.insertEvent(ctx, tx, &e)
	if err != nil {
		return MeshEvent{}, err
	}
	if !inserted {
		stored, err := s.events(ctx, tx, `WHERE e.id = ?`, e.ID)
		if err != nil || len(stored) == 0 {
			return MeshEvent{}, fmt.Errorf("reading stored event %s: %v", e.ID, err)
		}
		if stored[0].From != e.From || stored[0].AgentID != e.AgentID {
			return MeshEvent{}, ErrEventIDTaken
		}
		return stored[0], nil
	}
	var to []string
	if e.To != "" {
		to = append(to, e.To)
	}
	for _, r := range append(to, e.Deliver...) {
		if _, err := s.txExec(ctx, tx, `INSERT INTO mesh_deliveries (recipient, seq, channel, created_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (recipient, seq) DO NOTHING`, r, e.Seq, e.Channel, micros(e.CreatedAt)); err != nil {
			return MeshEvent{}, err
		}
	}
	return e, nil
}

const eventColumns = `e.seq, e.id, e.type, e.severity, e.agent_id, e.sender, e.sender_id, e.recipient, e.subject,
	e.content, e.parent_id, e.thread_id, e.task_id, e.channel, e.created_at, e.payload`

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// events reads events with their read receipts: where is the rest of a
// query over mesh_events e.
func (s *DB) events(ctx context.Context, db querier, where string, args ...any) ([]MeshEvent, error) {
	rows, err := db.QueryContext(ctx, s.rebind(`SELECT `+eventColumns+` FROM mesh_events e `+where), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MeshEvent
	for rows.Next() {
		var (
			e       MeshEvent
			at      int64
			payload string
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &e.Severity, &e.AgentID, &e.From, &e.FromID, &e.To, &e.Subject,
			&e.Content, &e.ParentID, &e.ThreadID, &e.TaskID, &e.Channel, &at, &payload); err != nil {
			return nil, err
		}
		e.CreatedAt, e.Payload = fromMicros(at), json.RawMessage(payload)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return out, s.readReceipts(ctx, db, out)
}

func (s *DB) readReceipts(ctx context.Context, db querier, evs []MeshEvent) error {
	if len(evs) == 0 {
		return nil
	}
	idx := map[string]int{}
	args := make([]any, len(evs))
	for i, e := range evs {
		idx[e.ID] = i
		args[i] = e.ID
	}
	rows, err := db.QueryContext(ctx, s.rebind(`SELECT event_id, agent_id, read_at FROM mesh_reads
		WHERE event_id IN (`+placeholders(len(evs))+`) ORDER BY read_at, agent_id`), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id string
			r  ReadReceipt
			at int64
		)
		if err := rows.Scan(&id, &r.AgentID, &at); err != nil {
			return err
		}
		r.ReadAt = fromMicros(at)
		evs[idx[id]].ReadBy = append(evs[idx[id]].ReadBy, r)
	}
	return rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// Event is one event by id.
func (s *DB) Event(ctx context.Context, id string) (MeshEvent, error) {
	evs, err := s.events(ctx, s.db, `WHERE e.id = ?`, id)
	if err != nil {
		return MeshEvent{}, fmt.Errorf("reading event %s: %w", id, err)
	}
	if len(evs) == 0 {
		return MeshEvent{}, fmt.Errorf("event %s: %w", id, ErrNotFound)
	}
	return evs[0], nil
}

// MarkRead records that agent read the event id, once (the first read
// time is kept), and answers the event with its receipts.
func (s *DB) MarkRead(ctx context.Context, id, agent string, at time.Time) (MeshEvent, error) {
	if err := checkID("agent_id", agent); err != nil {
		return MeshEvent{}, err
	}
	if _, err := s.Event(ctx, id); err != nil {
		return MeshEvent{}, err
	}
	if _, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO mesh_reads (event_id, agent_id, read_at) VALUES (?, ?, ?)
		ON CONFLICT (event_id, agent_id) DO NOTHING`), id, agent, micros(at)); err != nil {
		return MeshEvent{}, fmt.Errorf("marking event %s read by %s: %w", id, agent, err)
	}
	return s.Event(ctx, id)
}

// Thread is the thread an event is in, root first, in the order stored.
func (s *DB) Thread(ctx context.Context, id string) ([]MeshEvent, error) {
	e, err := s.Event(ctx, id)
	if err != nil {
		return nil, err
	}
	evs, err := s.events(ctx, s.db, `WHERE e.thread_id = ? ORDER BY e.seq LIMIT ?`, e.ThreadID, MaxThread)
	if err != nil {
		return nil, fmt.Errorf("reading the thread of %s: %w", id, err)
	}
	return evs, nil
}

// MeshInbox lists an agent's inbox a page at a time; the cursor is the
// last event's seq.
func (s *DB) MeshInbox(ctx context.Context, q InboxQuery, p Page) ([]MeshEvent, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	recips := slices.Clone(q.Recipients)
	if q.Broadcast {
		recips = append(recips, Broadcast)
	}
	if len(recips) == 0 {
		return nil, "", &InvalidError{"recipient_id", "is required"}
	}
	// Each recipient's page is read from the deliveries' key (recipient,
	// seq) alone, newest or oldest first and limited; the union of those
	// pages holds the inbox's page.
	var cursor int64 = -1
	if p.Cursor != "" {
		n, err := strconv.ParseInt(p.Cursor, 10, 64)
		if err != nil || n < 0 {
			return nil, "", &InvalidError{"cursor", "is not a cursor this listing returned"}
		}
		cursor = n
	}
	order, cmp := "ASC", ">"
	if q.Desc {
		order, cmp = "DESC", "<"
	}
	var (
		parts []string
		args  []any
	)
	for _, r := range recips {
		part := `SELECT seq FROM mesh_deliveries WHERE recipient = ?`
		args = append(args, r)
		if q.Channel != "" {
			part += ` AND channel = ?`
			args = append(args, q.Channel)
		}
		if !q.Since.IsZero() {
			part += ` AND created_at > ?`
			args = append(args, micros(q.Since))
		}
		if cursor >= 0 {
			part += ` AND seq ` + cmp + ` ?`
			args = append(args, cursor)
		}
		parts = append(parts, `SELECT seq FROM (`+part+` ORDER BY seq `+order+` LIMIT ?) AS r`+strconv.Itoa(len(parts)))
		args = append(args, limit+1)
	}
	where := `WHERE e.seq IN (SELECT seq FROM (` + strings.Join(parts, ` UNION `) + `) AS u ORDER BY seq ` + order + ` LIMIT ?)
		ORDER BY e.seq ` + order
	args = append(args, limit+1)
	evs, err := s.events(ctx, s.db, where, args...)
	if err != nil {
		return nil, "", fmt.Errorf("reading the inbox of %s: %w", strings.Join(q.Recipients, ", "), err)
	}
	return nextPage(evs, limit)
}

func pageBy(where string, args []any, cursor string, desc bool, limit int) (string, []any, error) {
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 0 {
			return "", nil, &InvalidError{"cursor", "is not a cursor this listing returned"}
		}
		if desc {
			where += ` AND e.seq < ?`
		} else {
			where += ` AND e.seq > ?`
		}
		args = append(args, n)
	}
	if desc {
		where += ` ORDER BY e.seq DESC LIMIT ?`
	} else {
		where += ` ORDER BY e.seq LIMIT ?`
	}
	return where, append(args, limit+1), nil
}

func nextPage(evs []MeshEvent, limit int) ([]MeshEvent, string, error) {
	if len(evs) <= limit {
		return evs, "", nil
	}
	evs = evs[:limit]
	return evs, strconv.FormatInt(evs[limit-1].Seq, 10), nil
}

// MaxKeywords bounds the keywords of a search.
const MaxKeywords = 16
