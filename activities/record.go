package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// ErrInvalidRecord is the type of the non-retryable error for a record
// the SSOT cannot keep: an unsafe id, no kind, a body that is not JSON.
const ErrInvalidRecord = "InvalidRecord"

// validName reports whether s can name a task or a record in a file: the
// git export and the diffs use them in paths. It must be valid UTF-8 too,
// as JSON would otherwise change the id.
func validName(s string) bool {
	return s != "" && len(s) <= 200 && !strings.HasPrefix(s, ".") &&
		!strings.ContainsAny(s, "/\\\x00\n\r") && utf8.ValidString(s)
}

func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrInvalidRecord, nil)
}

// TaskRecord is the task workflow's record in the SQL store (package ssot),
// which every worker shares: it is the Recorder, keeps result diffs for
// reviewers (DiffWriter) and caches command CI runs.
type TaskRecord struct {
	Store ssot.Chains
	// APIURL is the HTTP API's base URL (api.url), which DiffURLs start
	// with; empty leaves them as paths.
	APIURL string
	// Written, when set, is told each task whose chain a call added to,
	// after the write: the git export (ssot.git) follows from it. It
	// must not block.
	Written func(taskID string)
	// Mesh, when set, stores the mesh events of the records (TaskEvents)
	// in the transaction that saves them.
	Mesh bool
	// Leases, when set, makes a batch's Release the store's change of
	// the lease; without it, a batch with a Release is not written and
	// answers not Released.
	Leases LeaseChanges
}

var (
	_ Recorder   = (*TaskRecord)(nil)
	_ DiffWriter = (*TaskRecord)(nil)
)

// Record appends in's entries to the task's chain and, when in.Task is
// set, replaces the task's read rows (state, inbox, open decision) in the
// same transaction. A retried call writes nothing twice: an entry stored
// already with the same content is kept, and a state of a Rev the store
// has seen is not written again. An entry id stored with other content is
// an ErrRecordConflict. With in.Release, the lease it names ends in the
// same transaction (RecordResult.Released).
func (s *TaskRecord) Record(ctx context.Context, in RecordInput) (RecordResult, error) {
	if len(in.Entries) == 0 && len(in.Task) == 0 && in.Release == nil {
		return RecordResult{}, nil
	}
	entries := StoreEntries(in.Entries)
	var st *ssot.TaskState
	if len(in.Task) > 0 {
		v, err := TaskStateOf(in.TaskID, in.Rev, in.Task)
		if err != nil {
			return RecordResult{}, invalid("state of task %s: %v", in.TaskID, err)
		}
		st = &v
	}
	var (
		res      ssot.AppendResult
		released bool
		err      error
		events   []ssot.MeshEvent
	)
	if s.Mesh {
		events = TaskEvents(in.TaskID, in.Entries)
	}
	if in.Release != nil {
		if s.Leases == nil {
			return RecordResult{}, nil
		}
		change, cerr := s.Leases.ReleaseChange(*in.Release)
		if cerr != nil {
			return RecordResult{}, fmt.Errorf("releasing lease %s of task %s: %w", in.Release.LeaseID, in.TaskID, cerr)
		}
		res, released, err = s.Store.SaveReleasing(ctx, in.TaskID, entries, st, events, change)
		if err == nil && !released {
			return RecordResult{}, nil
		}
	} else {
		res, err = s.Store.SaveEvents(ctx, in.TaskID, entries, st, events)
	}
	var ce *ssot.ConflictError
	var ie *ssot.InvalidError
	switch {
	case errors.As(err, &ce):
		return RecordResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrRecordConflict, nil, ce.ID)
	case errors.As(err, &ie):
		return RecordResult{}, invalid("recording task %s: %v", in.TaskID, err)
	case err != nil:
		return RecordResult{}, err
	}
	if res.Written > 0 && s.Written != nil {
		s.Written(in.TaskID)
	}
	return RecordResult{Written: res.Written, Released: released}, nil
}

// StoreEntries are records as the SSOT stores them: a decision's with
// the digest of its body, which its answer is checked against.
func StoreEntries(in []RecordEntry) []ssot.Entry {
	entries := make([]ssot.Entry, len(in))
	for i, e := range in {
		entries[i] = ssot.Entry{ID: e.ID, Kind: string(e.Kind), RecordedAt: e.RecordedAt, Body: e.Body}
		if e.Kind == ssot.KindDecision {
			entries[i].Digest = BodyDigest(e.Body)
		}
	}
	return entries
}

// BodyDigest is the "digest" a decision record names (what it approved),
// read from the body so that any decision type carrying one is covered;
// empty when the body has none.
func BodyDigest(body json.RawMessage) string {
	var b struct {
		Digest string `json:"digest"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	return b.Digest
}

// inboxStatuses are the statuses in which a task's outbox is an agent's
// inbox: elsewhere the task waits for CI or an admin, not for the agent.
var inboxStatuses = map[string]bool{
	string(task.StatusDispatched): true,
	string(task.StatusInProgress): true,
	string(task.StatusInReview):   true,
}

// taskState reads the store's view of a task from the workflow's view
// (task.State as JSON). The open decision is read field by field, so a
// decision type that adds fields (subject, expires_at) is kept whole.
// TaskStateOf is the store's read-side state of a task from its state
// view (task.State as JSON) at revision rev: what Record saves.
func TaskStateOf(taskID string, rev int64, raw json.RawMessage) (ssot.TaskState, error) {
	var v struct {
		Status    string            `json:"status"`
		Turn      string            `json:"underlying_status"`
		Risk      string            `json:"risk_level"`
		Repo      string            `json:"repo"`
		Rejects   int               `json:"reject_count"`
		StartedAt time.Time         `json:"started_at"`
		UpdatedAt time.Time         `json:"updated_at"`
		Outbox    []json.RawMessage `json:"outbox"`
		Pending   json.RawMessage   `json:"pending"`
		Holders   []struct {
			Agent      string          `json:"agent"`
			Since      time.Time       `json:"since"`
			Unanswered json.RawMessage `json:"unanswered"`
		} `json:"holders"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return ssot.TaskState{}, err
	}
	st := ssot.TaskState{TaskID: taskID, Rev: rev, Status: v.Status, Risk: v.Risk, Repo: v.Repo, RejectCount: v.Rejects,
		StartedAt: v.StartedAt, UpdatedAt: v.UpdatedAt, State: raw}
	// A decision open in an agent's turn (awaiting_admin over
	// in_progress, say) leaves its message in the agent's inbox: a late
	// ACK still counts.
	if inboxStatuses[cmp.Or(v.Turn, v.Status)] {
		add := func(where string, b json.RawMessage, holder string, acked time.Time) error {
			var m struct {
				MsgID     string `json:"msg_id"`
				To        string `json:"to"`
				Type      string `json:"type"`
				Timestamp string `json:"timestamp"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			at, err := time.Parse(time.RFC3339, m.Timestamp)
			if err != nil {
				at = v.UpdatedAt
			}
			st.Outbox = append(st.Outbox, ssot.OutboxMessage{MsgID: m.MsgID, TaskID: taskID, Role: m.To, Type: m.Type, SentAt: at, Body: b,
				Holder: holder, AckedAt: acked})
			return nil
		}
		for i, b := range v.Outbox {
			if err := add(fmt.Sprintf("outbox[%d]", i), b, "", time.Time{}); err != nil {
				return ssot.TaskState{}, err
			}
		}
		// What an agent ACKed and has not answered stays in its inbox,
		// marked as its own (ssot.InboxFilter.Holder).
		for i, h := range v.Holders {
			if len(h.Unanswered) == 0 || string(h.Unanswered) == "null" {
				continue
			}
			if err := add(fmt.Sprintf("holders[%d].unanswered", i), h.Unanswered, h.Agent, h.Since); err != nil {
				return ssot.TaskState{}, err
			}
		}
	}
	if len(v.Pending) > 0 && string(v.Pending) != "null" {
		var d struct {
			ID        string    `json:"id"`
			Kind      string    `json:"kind"`
			RaisedAt  time.Time `json:"raised_at"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		if err := json.Unmarshal(v.Pending, &d); err != nil {
			return ssot.TaskState{}, fmt.Errorf("pending: %w", err)
		}
		// The subject of a task's decision is the task; the store keys
		// the row by it whatever the body says.
		st.Pending = []ssot.PendingDecision{{ID: d.ID, Subject: taskID, Kind: d.Kind, RaisedAt: d.RaisedAt,
			ExpiresAt: d.ExpiresAt, Body: v.Pending}}
	}
	return st, nil
}

// WriteDiff implements DiffWriter: it keeps the diff in the store and
// returns the API path that serves it, so a reviewer reaches it through
// any worker. Writing the same diff again changes nothing.
func (s *TaskRecord) WriteDiff(taskID, msgID string, diff []byte) (string, error) {
	if !validName(taskID) || !validName(msgID) {
		return "", invalid("diff of %q in task %q: the ids cannot name a diff", msgID, taskID)
	}
	if err := s.Store.PutFile(context.Background(), taskID, ssot.DiffName(msgID), diff); err != nil {
		return "", fmt.Errorf("keeping diff %s of task %s: %w", msgID, taskID, err)
	}
	return strings.TrimSuffix(s.APIURL, "/") + ssot.DiffPath(taskID, msgID), nil
}
