package ssot

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// appendTries bounds how often an append that lost a race to another
// writer of the same task is run again.
const appendTries = 8

// Append implements Chains.
func (s *DB) Append(ctx context.Context, taskID string, entries []Entry) (AppendResult, error) {
	return s.Save(ctx, taskID, entries, nil)
}

// Save implements Chains.
func (s *DB) Save(ctx context.Context, taskID string, entries []Entry, st *TaskState) (AppendResult, error) {
	res, _, err := s.save(ctx, taskID, entries, st, nil, nil)
	return res, err
}

// SaveEvents implements Chains.
func (s *DB) SaveEvents(ctx context.Context, taskID string, entries []Entry, st *TaskState, events []MeshEvent) (AppendResult, error) {
	res, _, err := s.save(ctx, taskID, entries, st, events, nil)
	return res, err
}

// SaveReleasing implements Chains.
func (s *DB) SaveReleasing(ctx context.Context, taskID string, entries []Entry, st *TaskState, events []MeshEvent, release LeaseChange) (AppendResult, bool, error) {
	return s.save(ctx, taskID, entries, st, events, &release)
}

// errLeaseMoved rolls back a SaveReleasing whose lease changed under it.
var errLeaseMoved = errors.New("the lease changed")

func (s *DB) save(ctx context.Context, taskID string, entries []Entry, st *TaskState, events []MeshEvent, release *LeaseChange) (AppendResult, bool, error) {
	rows, err := prepare(taskID, entries)
	if err != nil {
		return AppendResult{}, false, err
	}
	if st != nil {
		if err := st.check(taskID); err != nil {
			return AppendResult{}, false, err
		}
	}
	wrap := func(res AppendResult, err error) (AppendResult, bool, error) {
		var ce *ConflictError
		switch {
		case errors.Is(err, errLeaseMoved):
			return AppendResult{}, false, nil
		case err != nil && !errors.As(err, &ce):
			err = fmt.Errorf("saving %d records of task %s: %w", len(rows), taskID, err)
		}
		return res, err == nil, err
	}
	if s.group != nil {
		if release == nil {
			return wrap(s.group.save(ctx, taskID, rows, st, events))
		}
		return wrap(s.group.do(ctx, &groupSave{ctx: ctx, done: make(chan struct{}),
			fn: func(ctx context.Context, tx *sql.Tx) (AppendResult, bool, error) {
				return s.saveReleasingIn(ctx, tx, taskID, rows, st, events, *release)
			}}))
	}
	for try := 1; ; try++ {
		res, err := s.saveOnce(ctx, taskID, rows, st, events, release)
		if err == nil || !raced(err) || try == appendTries {
			return wrap(res, err)
		}
	}
}

// prepare checks entries and puts their bodies in canonical form.
func prepare(taskID string, entries []Entry) ([]Record, error) {
	if err := checkID("task_id", taskID); err != nil {
		return nil, err
	}
	now := time.Now()
	rows := make([]Record, len(entries))
	seen := map[string]bool{}
	for i, e := range entries {
		field := fmt.Sprintf("entries[%d]", i)
		if err := checkID(field+".id", e.ID); err != nil {
			return nil, err
		}
		if err := checkID(field+".kind", e.Kind); err != nil {
			return nil, err
		}
		if seen[e.ID] {
			return nil, &InvalidError{field + ".id", fmt.Sprintf("%s appears twice in one append", e.ID)}
		}
		seen[e.ID] = true
		body, err := Canonical(e.Body)
		if err != nil {
			return nil, &InvalidError{field + ".body", err.Error()}
		}
		at := e.RecordedAt
		if at.IsZero() {
			at = now
		}
		rows[i] = Record{TaskID: taskID, ID: e.ID, Kind: e.Kind, Digest: e.Digest, Body: body,
			BodyHash: hashHex(body), RecordedAt: fromMicros(micros(at))}
	}
	return rows, nil
}

func (s *DB) saveOnce(ctx context.Context, taskID string, rows []Record, st *TaskState, events []MeshEvent, release *LeaseChange) (AppendResult, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return AppendResult{}, err
	}
	defer tx.Rollback()
	if s.engine == EnginePostgres {
		// Writers of one task take turns; SQLite's write lock, taken at
		// BEGIN, does the same for the whole file.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, taskID); err != nil {
			return AppendResult{}, err
		}
	}
	var (
		res     AppendResult
		changed bool
	)
	if release != nil {
		res, changed, err = s.saveReleasingIn(ctx, tx, taskID, rows, st, events, *release)
	} else {
		res, changed, err = s.saveIn(ctx, tx, taskID, rows, st, events)
	}
	if err != nil || !changed {
		return res, err
	}
	return res, tx.Commit()
}

// saveIn does a SaveEvents's work in tx; changed is false when it wrote
// nothing.
func (s *DB) saveIn(ctx context.Context, tx *sql.Tx, taskID string, rows []Record, st *TaskState, events []MeshEvent) (res AppendResult, changed bool, err error) {
	head, err := s.head(ctx, tx, taskID)
	if err != nil {
		return res, false, err
	}
	res.Head = head
	for _, r := range rows {
		kept, err := s.kept(ctx, tx, r)
		if err != nil {
			return res, false, err
		}
		if kept {
			res.Kept++
			continue
		}
		r.Seq = res.Head.Seq + 1
		r.PrevHash = res.Head.Hash
		r.Hash = rowHash(s.chainKey, r.PrevHash, taskID, r.Seq, r.ID, r.Kind, micros(r.RecordedAt), r.Digest, r.BodyHash)
		if _, err := s.txExec(ctx, tx, `INSERT INTO records
			(task_id, seq, id, kind, recorded_at, digest, body, body_hash, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			taskID, r.Seq, r.ID, r.Kind, micros(r.RecordedAt), r.Digest, string(r.Body), r.BodyHash, r.PrevHash, r.Hash); err != nil {
			return res, false, err
		}
		res.Head = Head{Seq: r.Seq, Hash: r.Hash}
		res.Written++
	}
	if res.Written > 0 {
		if err := s.moveHead(ctx, tx, taskID, head, res.Head); err != nil {
			return res, false, err
		}
	}
	for _, e := range events {
		if _, err := s.appendEvent(ctx, tx, e); err != nil {
			return res, false, fmt.Errorf("event %s: %w", e.ID, err)
		}
	}
	if st != nil {
		if err := s.saveState(ctx, tx, st); err != nil {
			return res, false, err
		}
		return res, true, nil
	}
	return res, res.Written > 0 || len(events) > 0, nil
}

// saveReleasingIn ends a lease held directly in the store and does a
// Save's work, in tx; errLeaseMoved when the lease is no longer as
// release read it, for the caller to roll tx back. A release written
// already (a retry) goes on to the save.
func (s *DB) saveReleasingIn(ctx context.Context, tx *sql.Tx, taskID string, rows []Record, st *TaskState, events []MeshEvent, release LeaseChange) (AppendResult, bool, error) {
	ok, err := s.compareTx(ctx, tx, release)
	if err != nil {
		return AppendResult{}, false, fmt.Errorf("releasing lease %s: %w", release.Lease.LeaseID, err)
	}
	if !ok {
		return AppendResult{}, false, errLeaseMoved
	}
	res, _, err := s.saveIn(ctx, tx, taskID, rows, st, events)
	return res, true, err
}

// kept reports whether r is stored already as it is; stored otherwise is
// a conflict.
func (s *DB) kept(ctx context.Context, tx *sql.Tx, r Record) (bool, error) {
	var taskID, kind, digest, body string
	err := s.txQueryRow(ctx, tx, `SELECT task_id, kind, digest, body FROM records WHERE id = ?`, r.ID).
		Scan(&taskID, &kind, &digest, &body)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	why := ""
	switch {
	case taskID != r.TaskID:
		why = "task"
	case kind != r.Kind:
		why = "kind"
	case digest != r.Digest:
		why = "digest"
	case !bytes.Equal([]byte(body), r.Body):
		why = "body"
	}
	if why != "" {
		return false, &ConflictError{TaskID: r.TaskID, ID: r.ID, Why: why}
	}
	return true, nil
}

func (s *DB) head(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, taskID string) (Head, error) {
	var h Head
	const query = `SELECT seq, hash FROM chains WHERE task_id = ?`
	var row *sql.Row
	if tx, ok := q.(*sql.Tx); ok {
		row = s.txQueryRow(ctx, tx, query, taskID)
	} else {
		row = q.QueryRowContext(ctx, s.rebind(query), taskID)
	}
	err := row.Scan(&h.Seq, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return Head{}, nil
	}
	return h, err
}

// moveHead moves a chain's head from old to next, only if it is still at
// old: a writer that lost the race sees no row changed (or a duplicate
// key for a new chain) and runs again.
func (s *DB) moveHead(ctx context.Context, tx *sql.Tx, taskID string, old, next Head) error {
	if old.Seq == 0 {
		_, err := s.txExec(ctx, tx, `INSERT INTO chains (task_id, seq, hash) VALUES (?, ?, ?)`, taskID, next.Seq, next.Hash)
		return err
	}
	res, err := s.txExec(ctx, tx, `UPDATE chains SET seq = ?, hash = ? WHERE task_id = ? AND seq = ? AND hash = ?`,
		next.Seq, next.Hash, taskID, old.Seq, old.Hash)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return errLostRace
	}
	return nil
}

// errLostRace is a head that moved under a transaction.
var errLostRace = errors.New("the chain head moved during the append")
