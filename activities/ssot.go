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
	"time"

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
	// GitBin is the git executable; empty means "git" on PATH.
	GitBin string
}

// Store is the SSOT: a directory holding, per task, the current state in
// tasks/<task_id>/task.json, every record in tasks/<task_id>/messages/<id>.json
// and their order in tasks/<task_id>/index.jsonl; refused input goes to
// errors.jsonl at the root. Files are replaced atomically (temporary file,
// fsync, rename). One process writes a Store; any number may read it.
type Store struct {
	root string
	opts StoreOptions
	now  func() time.Time

	mu    sync.Mutex
	tasks map[string]*taskLog

	errMu sync.Mutex
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

func (s *Store) recordPath(taskID, id string) string {
	return filepath.Join(s.taskDir(taskID), "messages", id+".json")
}

// validName reports whether s can be a file name in the SSOT.
func validName(s string) bool {
	return s != "" && len(s) <= 200 && !strings.HasPrefix(s, ".") &&
		!strings.ContainsAny(s, "/\\\x00\n\r")
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
	var toWrite []RecordEntry
	var toIndex []indexLine
	seen := map[string]RecordEntry{}
	for _, e := range in.Entries {
		if prev, ok := seen[e.ID]; ok {
			if prev.Kind != e.Kind || !sameJSON(prev.Body, e.Body) {
				return RecordResult{}, conflict(in.TaskID, e.ID, "twice in one call with different content")
			}
			continue
		}
		seen[e.ID] = e
		old, err := readRecord(s.recordPath(in.TaskID, e.ID))
		switch {
		case errors.Is(err, os.ErrNotExist):
			toWrite = append(toWrite, e)
			toIndex = append(toIndex, indexLine{ID: e.ID, Kind: e.Kind})
		case err != nil:
			return RecordResult{}, fmt.Errorf("reading record %s of task %s: %w", e.ID, in.TaskID, err)
		case old.Kind != e.Kind || !sameJSON(old.Body, e.Body):
			return RecordResult{}, conflict(in.TaskID, e.ID, "already kept with other content")
		case !t.indexed[e.ID]:
			// Written before a crash or a failed index append: heal.
			toIndex = append(toIndex, indexLine{ID: e.ID, Kind: e.Kind})
		}
	}

	if len(toWrite) > 0 {
		dir := filepath.Join(s.taskDir(in.TaskID), "messages")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return RecordResult{}, fmt.Errorf("writing records of task %s: %w", in.TaskID, err)
		}
		for _, e := range toWrite {
			at := e.RecordedAt
			if at.IsZero() {
				at = s.now()
			}
			rec := StoredRecord{ID: e.ID, Kind: e.Kind, TaskID: in.TaskID, RecordedAt: at.UTC(), Body: e.Body}
			data, err := json.MarshalIndent(rec, "", "  ")
			if err != nil {
				return RecordResult{}, fmt.Errorf("encoding record %s of task %s: %w", e.ID, in.TaskID, err)
			}
			if err := writeAtomic(s.recordPath(in.TaskID, e.ID), append(data, '\n'), false); err != nil {
				return RecordResult{}, fmt.Errorf("writing record %s of task %s: %w", e.ID, in.TaskID, err)
			}
		}
		// The records must be durable before an index line names them.
		if err := syncDir(dir); err != nil {
			return RecordResult{}, fmt.Errorf("writing records of task %s: %w", in.TaskID, err)
		}
	}
	if len(toIndex) > 0 {
		if err := s.appendIndex(in.TaskID, t, toIndex); err != nil {
			return RecordResult{}, err
		}
	}
	if len(in.Task) > 0 {
		if err := s.writeTask(in.TaskID, in.Task); err != nil {
			return RecordResult{}, err
		}
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

func readRecord(path string) (StoredRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return StoredRecord{}, err
	}
	var r StoredRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return StoredRecord{}, fmt.Errorf("decoding %s: %w", path, err)
	}
	return r, nil
}

// writeTask replaces task.json when its content changed.
func (s *Store) writeTask(taskID string, state json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, state, "", "  "); err != nil {
		return fmt.Errorf("encoding state of task %s: %w", taskID, err)
	}
	buf.WriteByte('\n')
	path := filepath.Join(s.taskDir(taskID), "task.json")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, buf.Bytes()) {
		return nil
	}
	if err := os.MkdirAll(s.taskDir(taskID), 0o755); err != nil {
		return fmt.Errorf("writing state of task %s: %w", taskID, err)
	}
	// task.json is derived state, rewritten on every batch: replaced
	// atomically (no reader ever sees half of it) but not synced, which
	// cost two fsyncs a batch. After a power cut it may be older than the
	// records; the next write, or History, which reads the records, is right.
	if err := writeFile(path, buf.Bytes(), false); err != nil {
		return fmt.Errorf("writing state of task %s: %w", taskID, err)
	}
	return nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, fsynced, then renamed over it. syncParent also fsyncs the
// directory so the rename itself is durable.
func writeAtomic(path string, data []byte, syncParent bool) error {
	if err := writeFile(path, data, true); err != nil {
		return err
	}
	if syncParent {
		return syncDir(filepath.Dir(path))
	}
	return nil
}

// writeFile replaces path with data through a temporary file and a
// rename, syncing the data first when durable.
func writeFile(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
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
