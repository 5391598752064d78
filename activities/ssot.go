package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
)

// ErrInvalidRecord is the type of the non-retryable error for a record
// the SSOT cannot keep: an unsafe id, no kind, a body that is not JSON.
const ErrInvalidRecord = "InvalidRecord"

// ErrNotFound is returned (wrapped) by the Store's read API when a task or
// record does not exist.
var ErrNotFound = errors.New("not found")

// StoreOptions configure a Store.
type StoreOptions struct {
	// Commit makes the SSOT directory a git repository (initialised when
	// needed) with one commit per write that changed something.
	Commit bool
	// Push pushes every commit to Remote (implies Commit).
	Push bool
	// Remote is a remote name or URL; empty means "origin".
	Remote string
	// AuthorName and AuthorEmail sign SSOT commits; empty means
	// "ampflow" and "ampflow@localhost".
	AuthorName, AuthorEmail string
	// Now is the clock for records without RecordedAt; nil is time.Now.
	Now func() time.Time
	// ErrorLogMax is the size at which errors.jsonl is rotated; zero is
	// DefaultErrorLogMax.
	ErrorLogMax int64
	// GitBin is the git executable; empty means "git" on PATH.
	GitBin string
}

// Store is the file SSOT of earlier versions, kept so that `ampflow ssot
// import` can read it; the SSOT is now the SQL store (package ssot). It is
// a directory holding, per task, in tasks/<task_id>/,
// index.jsonl, the journal of its records: one line per record, in write
// order, carrying the whole StoredRecord; task.json, its current state;
// and .task.json.spare, the file its next state is written into (see
// writeTask). Refused input goes to errors.jsonl at the root. One process
// writes a Store; any number may read it. Task sees whole states only; a
// reader of task.json that bypasses it (cat, an editor) and holds the file
// open while the task's state is written twice may see a mix of two.
//
// What is synced: a Record call appends its records' lines in one write
// and fsyncs index.jsonl once; when that creates index.jsonl, the task's
// directory and tasks/ are fsynced too. errors.jsonl is appended and
// fsynced by one writer behind AppendError, a batch at a time; diffs and
// CI results are written to a temporary file, fsynced, renamed, and their
// directory fsynced. task.json is not synced.
//
// What a power cut can lose: no record of a Record call that succeeded.
// A journal line the cut tore belongs to a call that did not succeed:
// readers ignore it and the task's next write in a new process cuts it
// off. task.json may hold an older state or, as states are written in
// place, bytes of two; Task then returns the spare's state when that is
// whole, and the task's next state write replaces it. Refusals queued
// for errors.jsonl and not yet written are lost (FlushErrors waits for
// them).
//
// Older data: journal lines of the form {"id","kind"} carry no record;
// for those, messages/<id>.json, fsynced when it was written, is the
// source. Other files in messages/ are neither read nor written any more;
// only temporary files left there are removed.
type Store struct {
	root string
	opts StoreOptions
	now  func() time.Time

	mu    sync.Mutex
	tasks map[string]*taskLog

	noExchange atomic.Bool // the file system cannot swap two files in one rename
	noLink     atomic.Bool // nor hard-link a file

	errMu sync.Mutex
	errs  errorLog
	git   *ssotGit
}

// StoredRecord is one record as the SSOT keeps it.
type StoredRecord struct {
	ID         string          `json:"id"`
	Kind       RecordKind      `json:"kind"`
	TaskID     string          `json:"task_id"`
	RecordedAt time.Time       `json:"recorded_at"`
	Body       json.RawMessage `json:"body"`
}

// NewStore opens (creating it when needed) the SSOT rooted at root.
func NewStore(root string, opts StoreOptions) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("opening SSOT %s: %w", root, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, "tasks"), 0o755); err != nil {
		return nil, fmt.Errorf("opening SSOT %s: %w", abs, err)
	}
	s := &Store{root: abs, opts: opts, now: opts.Now, tasks: map[string]*taskLog{}}
	if s.now == nil {
		s.now = time.Now
	}
	if opts.Commit || opts.Push {
		if s.git, err = openSSOTGit(abs, opts); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Root is the SSOT directory.
func (s *Store) Root() string { return s.root }

func (s *Store) taskDir(taskID string) string { return filepath.Join(s.root, "tasks", taskID) }

// recordPath is the file of a record journaled in the older form.
func (s *Store) recordPath(taskID, id string) string {
	return filepath.Join(s.taskDir(taskID), "messages", id+".json")
}

// validName reports whether s can be a file name in the SSOT.
// It must be valid UTF-8 too, as JSON would otherwise change the id the
// journal keeps.
func validName(s string) bool {
	return s != "" && len(s) <= 200 && !strings.HasPrefix(s, ".") &&
		!strings.ContainsAny(s, "/\\\x00\n\r") && utf8.ValidString(s)
}

func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrInvalidRecord, nil)
}

// Record writes in's entries and, when set, the task's state. It is
// idempotent: an entry already kept with the same kind and body is
// skipped; one kept with another kind or body is an ErrRecordConflict and
// nothing of the call is written.
func (s *Store) Record(ctx context.Context, in RecordInput) (RecordResult, error) {
	if !validName(in.TaskID) {
		return RecordResult{}, invalid("task id %q cannot name an SSOT directory", in.TaskID)
	}
	for _, e := range in.Entries {
		if !validName(e.ID) {
			return RecordResult{}, invalid("record id %q of task %s cannot name an SSOT file", e.ID, in.TaskID)
		}
		if e.Kind == "" || !json.Valid(e.Body) {
			return RecordResult{}, invalid("record %s of task %s has no kind or a body that is not JSON", e.ID, in.TaskID)
		}
	}
	if len(in.Task) > 0 && !json.Valid(in.Task) {
		return RecordResult{}, invalid("state of task %s is not JSON", in.TaskID)
	}
	if len(in.Entries) == 0 && len(in.Task) == 0 {
		return RecordResult{}, nil
	}

	t := s.taskLog(in.TaskID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := s.loadIndex(in.TaskID, t); err != nil {
		return RecordResult{}, err
	}

	// First pass: find conflicts before writing anything.
	var toWrite []StoredRecord
	seen := map[string]RecordEntry{}
	for _, e := range in.Entries {
		if prev, ok := seen[e.ID]; ok {
			if prev.Kind != e.Kind || !sameJSON(prev.Body, e.Body) {
				return RecordResult{}, conflict(in.TaskID, e.ID, "twice in one call with different content")
			}
			continue
		}
		seen[e.ID] = e
		body, sum, err := compactBody(e.Body)
		if err != nil {
			return RecordResult{}, invalid("record %s of task %s: %v", e.ID, in.TaskID, err)
		}
		if k, ok := t.kept[e.ID]; ok {
			same, found, err := s.sameAsKept(in.TaskID, e, k, sum)
			if err != nil {
				return RecordResult{}, fmt.Errorf("reading record %s of task %s: %w", e.ID, in.TaskID, err)
			}
			if found && !same {
				return RecordResult{}, conflict(in.TaskID, e.ID, "already kept with other content")
			}
			if found {
				continue
			}
			// An old line whose file was removed by hand: keep it again.
		}
		at := e.RecordedAt
		if at.IsZero() {
			at = s.now()
		}
		toWrite = append(toWrite, StoredRecord{ID: e.ID, Kind: e.Kind, TaskID: in.TaskID, RecordedAt: at.UTC(), Body: body})
	}

	err := s.writeRecords(in.TaskID, t, toWrite)
	if err == nil && len(in.Task) > 0 {
		err = s.writeTask(in.TaskID, t, in.Task)
	}
	if err != nil {
		// Clean up what the failure left before the next write of the task.
		t.loaded = false
		return RecordResult{}, err
	}
	if s.git != nil {
		msg := commitMessage(in)
		if err := s.git.commit(ctx, msg, s.taskDir(in.TaskID)); err != nil {
			return RecordResult{Written: len(toWrite)}, fmt.Errorf("committing task %s: %w", in.TaskID, err)
		}
	}
	return RecordResult{Written: len(toWrite)}, nil
}

func conflict(taskID, id, why string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("SSOT record %s of task %s %s", id, taskID, why), ErrRecordConflict, nil)
}

// sameJSON compares two JSON documents: byte-equal once compacted, or
// equal as values (other key order or number spelling).
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes()) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// commitMessage names what a Record call wrote, e.g.
// "ssot: message task_result-T-2026-001-17… (T-2026-001)".
func commitMessage(in RecordInput) string {
	var parts []string
	for _, e := range in.Entries {
		parts = append(parts, string(e.Kind)+" "+e.ID)
	}
	if len(parts) == 0 {
		parts = append(parts, "task state")
	}
	return fmt.Sprintf("ssot: %s (%s)", strings.Join(parts, ", "), in.TaskID)
}
