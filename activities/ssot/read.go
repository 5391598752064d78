package ssot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

const recordColumns = `task_id, seq, id, kind, recorded_at, digest, body, body_hash, prev_hash, hash`

type scanner interface{ Scan(dest ...any) error }

func scanRecord(sc scanner) (Record, error) {
	var r Record
	var us int64
	var body string
	if err := sc.Scan(&r.TaskID, &r.Seq, &r.ID, &r.Kind, &us, &r.Digest, &body, &r.BodyHash, &r.PrevHash, &r.Hash); err != nil {
		return Record{}, err
	}
	r.RecordedAt = fromMicros(us)
	r.Body = []byte(body)
	return r, nil
}

// History implements Chains.
func (s *DB) History(ctx context.Context, taskID string, p Page) ([]Record, string, error) {
	if err := checkID("task_id", taskID); err != nil {
		return nil, "", err
	}
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	after, err := decodeSeqCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	recs, err := s.records(ctx, taskID, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("reading the history of task %s: %w", taskID, err)
	}
	if len(recs) == 0 && after == 0 {
		if h, err := s.Head(ctx, taskID); err != nil {
			return nil, "", err
		} else if h.Seq == 0 {
			return nil, "", fmt.Errorf("task %s: %w", taskID, ErrNotFound)
		}
	}
	recs, next := cutPage(recs, limit, func(r Record) string { return seqCursor(r.Seq) })
	return recs, next, nil
}

// records reads up to n rows of a chain after seq.
func (s *DB) records(ctx context.Context, taskID string, after int64, n int) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+recordColumns+` FROM records
		WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?`), taskID, after, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Get implements Chains.
func (s *DB) Get(ctx context.Context, id string) (Record, error) {
	if err := checkID("id", id); err != nil {
		return Record{}, err
	}
	r, err := scanRecord(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+recordColumns+` FROM records WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("record %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Record{}, fmt.Errorf("reading record %s: %w", id, err)
	}
	return r, nil
}

// Head implements Chains.
func (s *DB) Head(ctx context.Context, taskID string) (Head, error) {
	if err := checkID("task_id", taskID); err != nil {
		return Head{}, err
	}
	h, err := s.head(ctx, s.db, taskID)
	if err != nil {
		return Head{}, fmt.Errorf("reading the chain head of task %s: %w", taskID, err)
	}
	return h, nil
}

// Tasks implements Chains.
func (s *DB) Tasks(ctx context.Context, p Page) ([]string, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	after := ""
	if p.Cursor != "" {
		if after, err = decodeCursor(p.Cursor); err != nil {
			return nil, "", err
		}
	}
	// Tasks with records, and chain heads whose rows are all gone: both
	// must be seen by a verification.
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT task_id FROM chains WHERE task_id > ?
		UNION SELECT DISTINCT task_id FROM records WHERE task_id > ?
		ORDER BY task_id LIMIT ?`), after, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("listing tasks: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, "", fmt.Errorf("listing tasks: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("listing tasks: %w", err)
	}
	ids, next := cutPage(ids, limit, encodeCursor)
	return ids, next, nil
}

// Verify implements Chains. It reads the chain a page at a time, so a long
// chain costs no more memory than a short one. It may run while the task
// is written: rows past the head it read first are checked against the
// head read again.
func (s *DB) Verify(ctx context.Context, taskID string) (Head, error) {
	if err := checkID("task_id", taskID); err != nil {
		return Head{}, err
	}
	head, err := s.Head(ctx, taskID)
	if err != nil {
		return Head{}, err
	}
	prev := Head{}
	for {
		if err := s.walk(ctx, taskID, &prev); err != nil {
			return Head{}, err
		}
		if prev.Seq <= head.Seq {
			break
		}
		// A write moves the head in the transaction that adds its rows,
		// so rows read before the head is read again are under it, unless
		// they were inserted behind the store's back.
		now, err := s.Head(ctx, taskID)
		if err != nil {
			return Head{}, err
		}
		if now.Seq < prev.Seq {
			ce := &ChainError{TaskID: taskID, Seq: now.Seq + 1, Problem: fmt.Sprintf("lies beyond the chain head #%d (inserted)", now.Seq)}
			if recs, err := s.records(ctx, taskID, now.Seq, 1); err == nil && len(recs) == 1 {
				ce.ID = recs[0].ID
			}
			return Head{}, ce
		}
		head = now
	}
	switch {
	case head.Seq == 0 && prev.Seq == 0:
		return Head{}, fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	case head.Seq > prev.Seq:
		return Head{}, &ChainError{TaskID: taskID, Seq: prev.Seq + 1, Problem: fmt.Sprintf("is missing (deleted): the chain head is #%d", head.Seq)}
	case head != prev:
		return Head{}, &ChainError{TaskID: taskID, Seq: prev.Seq, ID: "", Problem: "does not match the chain head"}
	}
	return head, nil
}

// walk checks the rows of a chain after prev, moving prev to the last.
func (s *DB) walk(ctx context.Context, taskID string, prev *Head) error {
	for {
		recs, err := s.records(ctx, taskID, prev.Seq, MaxLimit)
		if err != nil {
			return fmt.Errorf("verifying task %s: %w", taskID, err)
		}
		for _, r := range recs {
			if r.Seq != prev.Seq+1 {
				return &ChainError{TaskID: taskID, Seq: prev.Seq + 1, Problem: "is missing (deleted)"}
			}
			if problem := r.check(s.chainKey, prev.Hash); problem != "" {
				return &ChainError{TaskID: taskID, Seq: r.Seq, ID: r.ID, Problem: problem}
			}
			*prev = Head{Seq: r.Seq, Hash: r.Hash}
		}
		if len(recs) < MaxLimit {
			return nil
		}
	}
}

// AppendError implements Chains.
// Bounds of the kept refusals: each keeps at most MaxErrorRaw bytes of the
// refused input, and the newest MaxErrors are kept, the older ones pruned
// every pruneErrorsEvery refusals.
const (
	MaxErrorRaw = 64 << 10
	MaxErrors   = 100_000
)

// keepErrors and pruneErrorsEvery are MaxErrors and how often the kept
// refusals are pruned; tests make them small.
var keepErrors, pruneErrorsEvery int64 = MaxErrors, 1000

func (s *DB) AppendError(ctx context.Context, e ErrorEntry) error {
	if e.RecordedAt.IsZero() {
		e.RecordedAt = time.Now()
	}
	if e.Source == "" || e.Reason == "" {
		return &InvalidError{"source, reason", "are required"}
	}
	if len(e.Raw) > MaxErrorRaw {
		e.Raw = strings.ToValidUTF8(e.Raw[:MaxErrorRaw], "") + fmt.Sprintf("… (%d bytes in all)", len(e.Raw))
	}
	var seq int64
	err := s.db.QueryRowContext(ctx, s.rebind(`INSERT INTO errors (recorded_at, source, task_id, reason, raw) VALUES (?, ?, ?, ?, ?) RETURNING seq`),
		micros(e.RecordedAt), e.Source, e.TaskID, e.Reason, e.Raw).Scan(&seq)
	if err != nil {
		return fmt.Errorf("keeping refused input from %s: %w", e.Source, err)
	}
	if seq%pruneErrorsEvery == 0 {
		// The oldest go once MaxErrors are kept, a batch at a time.
		if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM errors WHERE seq <= ?`), seq-keepErrors); err != nil {
			return fmt.Errorf("pruning the kept refusals: %w", err)
		}
	}
	return nil
}

// Errors implements Chains.
func (s *DB) Errors(ctx context.Context, p Page) ([]ErrorEntry, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	after, err := decodeSeqCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT seq, recorded_at, source, task_id, reason, raw FROM errors
		WHERE seq > ? ORDER BY seq LIMIT ?`), after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("reading the error log: %w", err)
	}
	defer rows.Close()
	var out []ErrorEntry
	for rows.Next() {
		var e ErrorEntry
		var us int64
		if err := rows.Scan(&e.Seq, &us, &e.Source, &e.TaskID, &e.Reason, &e.Raw); err != nil {
			return nil, "", fmt.Errorf("reading the error log: %w", err)
		}
		e.RecordedAt = fromMicros(us)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("reading the error log: %w", err)
	}
	out, next := cutPage(out, limit, func(e ErrorEntry) string { return seqCursor(e.Seq) })
	return out, next, nil
}
