// Package ssot is the shared record: every message, ACK, escalation,
// decision and refusal of every task, in a SQL database that any number
// of workers share. SQLite is the embedded engine (one file, the default
// of `ampflow dev`); PostgreSQL serves a cluster. Both run the same
// queries behind one type, with schema migrations embedded in the binary
// and applied when the store opens.
//
// Each task's records form a hash chain: a row holds the SHA-256 of its
// canonical body and a hash over its fields and the previous row's hash,
// and the chains table keeps each chain's head. Verify walks a chain and
// names the first row that does not hold: a row edited, inserted or
// deleted behind the store's back.
package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// Listing bounds: a page holds DefaultLimit rows unless asked for fewer
// or more, never more than MaxLimit.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// MaxIDLen bounds record and task ids.
const MaxIDLen = 200

// ErrNotFound is returned (wrapped) when a task or record does not exist.
var ErrNotFound = errors.New("not found")

// Entry is one record to append to a task's chain.
type Entry struct {
	ID   string
	Kind string
	// RecordedAt is when the recorded event happened; it is kept to the
	// microsecond. Zero means now.
	RecordedAt time.Time
	// Digest names what a decision record approved (a SHA-256 in hex);
	// empty for other records.
	Digest string
	// Body is the record itself, any JSON value; it is kept in canonical
	// form (see Canonical).
	Body json.RawMessage
}

// Record is one stored row of a task's chain.
type Record struct {
	TaskID     string          `json:"task_id"`
	Seq        int64           `json:"seq"`
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	RecordedAt time.Time       `json:"recorded_at"`
	Digest     string          `json:"digest,omitempty"`
	Body       json.RawMessage `json:"body"`
	BodyHash   string          `json:"body_hash"`
	PrevHash   string          `json:"prev_hash"`
	Hash       string          `json:"hash"`
}

// Head is the last link of a task's chain; the zero Head is an empty chain.
type Head struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// AppendResult says what an Append did.
type AppendResult struct {
	// Written counts the entries stored by this call; Kept counts those
	// found stored already with the same content.
	Written, Kept int
	Head          Head
}

// ErrorEntry is one piece of input refused at an entry point.
type ErrorEntry struct {
	Seq        int64     `json:"seq"`
	RecordedAt time.Time `json:"recorded_at"`
	Source     string    `json:"source"`
	TaskID     string    `json:"task_id,omitempty"`
	Reason     string    `json:"reason"`
	Raw        string    `json:"raw,omitempty"`
}

// Page asks for one page of a listing: at most Limit rows (DefaultLimit
// when zero) after Cursor, which is empty for the first page or the next
// cursor a previous page returned.
type Page struct {
	Limit  int
	Cursor string
}

// Chains is the shared record: each task's chain of records with its
// state, outbox and open decisions, the refused input and the kept files.
// *DB implements it on both engines.
type Chains interface {
	// Append adds entries to the end of a task's chain in one transaction.
	// An entry whose id is stored already with the same task, kind, digest
	// and body is kept as it is (a retry); with anything else it is a
	// *ConflictError and nothing of the call is written.
	Append(ctx context.Context, taskID string, entries []Entry) (AppendResult, error)
	// Save appends like Append and, in the same transaction, replaces the
	// task's state, outbox and open decisions with st unless the store
	// holds a state of a higher Rev already (a late retry).
	Save(ctx context.Context, taskID string, entries []Entry, st *TaskState) (AppendResult, error)
	// SaveEvents saves like Save and stores events in the mesh, as
	// AppendEvents does, in the same transaction.
	SaveEvents(ctx context.Context, taskID string, entries []Entry, st *TaskState, events []MeshEvent) (AppendResult, error)
	// SaveReleasing saves like SaveEvents and, in the same transaction,
	// ends a lease held directly in the store with release (a
	// compare-and-set, as CompareLease). When the lease has changed
	// meanwhile, it writes nothing and answers released false; a release
	// written already (a retry) answers true.
	SaveReleasing(ctx context.Context, taskID string, entries []Entry, st *TaskState, events []MeshEvent, release LeaseChange) (res AppendResult, released bool, err error)
	// Task is a task's latest state.
	Task(ctx context.Context, taskID string) (TaskState, error)
	// TaskList lists tasks newest first, without their outbox and decisions.
	TaskList(ctx context.Context, f TaskFilter, p Page) (tasks []TaskState, next string, err error)
	// Inbox lists the messages waiting for a role, oldest first.
	Inbox(ctx context.Context, role string, p Page) (msgs []OutboxMessage, next string, err error)
	// Pending lists open decisions of every subject, oldest first.
	Pending(ctx context.Context, p Page) (ds []PendingDecision, next string, err error)
	// History is a task's records in chain order; next is empty on the
	// last page.
	History(ctx context.Context, taskID string, p Page) (recs []Record, next string, err error)
	// Get is one record by id.
	Get(ctx context.Context, id string) (Record, error)
	// Head is the head of a task's chain.
	Head(ctx context.Context, taskID string) (Head, error)
	// Tasks lists the ids of tasks with records, in id order.
	Tasks(ctx context.Context, p Page) (ids []string, next string, err error)
	// Verify walks a task's chain; a *ChainError names the first row
	// that does not verify.
	Verify(ctx context.Context, taskID string) (Head, error)
	// AppendError keeps refused input.
	AppendError(ctx context.Context, e ErrorEntry) error
	// Errors lists refused input, oldest first.
	Errors(ctx context.Context, p Page) (errs []ErrorEntry, next string, err error)
	// PutFile keeps data under a task and a name (a diff, a CI log),
	// replacing what the name held.
	PutFile(ctx context.Context, taskID, name string, data []byte) error
	// File reads what PutFile kept.
	File(ctx context.Context, taskID, name string) ([]byte, error)
	Close() error
}

var _ Chains = (*DB)(nil)

// ConflictError is an append that reuses an id for other content.
type ConflictError struct {
	TaskID, ID string
	// Why says what differs: "task", "kind", "digest" or "body".
	Why string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("record %s of task %s is stored already with another %s", e.ID, e.TaskID, e.Why)
}

// ChainError is a row that does not verify.
type ChainError struct {
	TaskID string
	Seq    int64
	// ID is the row's record id; empty when the row is missing.
	ID      string
	Problem string
}

func (e *ChainError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("task %s: record #%d: %s", e.TaskID, e.Seq, e.Problem)
	}
	return fmt.Sprintf("task %s: record #%d (%s): %s", e.TaskID, e.Seq, e.ID, e.Problem)
}

// InvalidError is input the store refuses before touching the database.
type InvalidError struct {
	Field, Problem string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Problem }

// checkID refuses an id that is empty, too long, not UTF-8 or holds a
// control character (the chain's hash input is line-separated).
func checkID(field, id string) error {
	switch {
	case id == "":
		return &InvalidError{field, "is required"}
	case len(id) > MaxIDLen:
		return &InvalidError{field, fmt.Sprintf("is longer than %d bytes", MaxIDLen)}
	case !utf8.ValidString(id):
		return &InvalidError{field, "is not valid UTF-8"}
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return &InvalidError{field, "holds a control character"}
		}
	}
	return nil
}

func limitOf(p Page) (int, error) {
	switch {
	case p.Limit == 0:
		return DefaultLimit, nil
	case p.Limit < 0 || p.Limit > MaxLimit:
		return 0, &InvalidError{"limit", fmt.Sprintf("must be from 1 to %d", MaxLimit)}
	}
	return p.Limit, nil
}
