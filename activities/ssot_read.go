package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
)

// History returns a task's records in the order they were written. It
// never writes: records a crash left out of the journal come last, oldest
// first, until the next write heals it. Records come from the journal, so
// a record file a power cut lost does not hide its record.
func (s *Store) History(taskID string) ([]StoredRecord, error) {
	if !validName(taskID) {
		return nil, fmt.Errorf("reading history of task %q: %w", taskID, ErrNotFound)
	}
	if _, err := os.Stat(s.taskDir(taskID)); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading history of task %s: %w", taskID, ErrNotFound)
	}
	lines, orphans, err := s.scanTask(taskID, false)
	if err != nil {
		return nil, err
	}
	out := make([]StoredRecord, 0, len(lines)+len(orphans))
	for _, l := range lines {
		if l.full() {
			out = append(out, l.StoredRecord)
			continue
		}
		r, err := readRecord(s.recordPath(taskID, l.ID))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed by hand; the index outlived it
		}
		if err != nil {
			return nil, fmt.Errorf("reading record %s of task %s: %w", l.ID, taskID, err)
		}
		out = append(out, r)
	}
	return append(out, orphans...), nil
}

// Get returns the record with the given msg_id (or decision/event id)
// from any task. A msg_id "{type}-{task_id}-{unix_ms}" names its task, so
// that task is read first; other ids are looked for in every task, in
// the record files and then, for a file a power cut lost, the journals.
func (s *Store) Get(id string) (StoredRecord, error) {
	if !validName(id) {
		return StoredRecord{}, fmt.Errorf("reading record %q: %w", id, ErrNotFound)
	}
	named, ok := taskOfMsgID(id)
	if !ok || !validName(named) {
		named = ""
	}
	if named != "" {
		r, found, err := s.find(named, id)
		if !found && err == nil {
			r, found, err = s.journalRecord(named, id)
		}
		if found || err != nil {
			return r, wrapGet(id, err)
		}
	}
	tasks, err := s.Tasks()
	if err != nil {
		return StoredRecord{}, err
	}
	for _, t := range tasks {
		if r, found, err := s.find(t, id); found || err != nil {
			return r, wrapGet(id, err)
		}
	}
	for _, t := range tasks {
		if t == named {
			continue
		}
		if r, found, err := s.journalRecord(t, id); found || err != nil {
			return r, wrapGet(id, err)
		}
	}
	return StoredRecord{}, fmt.Errorf("reading record %s: %w", id, ErrNotFound)
}

// find reads record id of a task from its file; a file that does not
// parse, torn by a power cut, is read from the task's journal instead.
func (s *Store) find(taskID, id string) (StoredRecord, bool, error) {
	r, err := readRecord(s.recordPath(taskID, id))
	switch {
	case err == nil:
		return r, true, nil
	case errors.Is(err, os.ErrNotExist):
		return StoredRecord{}, false, nil
	}
	if jr, ok, jerr := s.journalRecord(taskID, id); jerr != nil || ok {
		return jr, ok, jerr
	}
	return StoredRecord{}, false, err
}

func wrapGet(id string, err error) error {
	if err != nil {
		return fmt.Errorf("reading record %s: %w", id, err)
	}
	return nil
}

// taskOfMsgID extracts task_id from "{type}-{task_id}-{unix_ms}". Types
// contain no '-', so the task id lies between the first '-' and the last.
func taskOfMsgID(id string) (string, bool) {
	first := strings.IndexByte(id, '-')
	last := strings.LastIndexByte(id, '-')
	if first < 0 || last <= first+1 {
		return "", false
	}
	ms := id[last+1:]
	if ms == "" || strings.IndexFunc(ms, func(r rune) bool { return !unicode.IsDigit(r) }) >= 0 {
		return "", false
	}
	return id[first+1 : last], true
}

// Task returns a task's current state, as last recorded.
func (s *Store) Task(taskID string) (json.RawMessage, error) {
	if !validName(taskID) {
		return nil, fmt.Errorf("reading task %q: %w", taskID, ErrNotFound)
	}
	data, err := readAll(filepath.Join(s.taskDir(taskID), "task.json"), "task "+taskID)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(data), nil
}

// Tasks lists the ids of every task in the SSOT, sorted.
func (s *Store) Tasks() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.root, "tasks"))
	if err != nil {
		return nil, fmt.Errorf("listing tasks in %s: %w", s.root, err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && validName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// ErrorEntry is one refused input, kept in errors.jsonl.
type ErrorEntry struct {
	Time   time.Time `json:"time"`
	Remote string    `json:"remote,omitempty"` // client address, when from the network
	Source string    `json:"source"`           // http, cli, …
	Reason string    `json:"reason"`
	Raw    string    `json:"raw,omitempty"` // the refused input, cut at maxErrorRaw bytes
}

const maxErrorRaw = 64 << 10

// AppendError appends a refused input to errors.jsonl (fsynced).
func (s *Store) AppendError(e ErrorEntry) error {
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	e.Time = e.Time.UTC()
	if len(e.Raw) > maxErrorRaw {
		e.Raw = e.Raw[:maxErrorRaw] + "…(cut)"
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding error entry from %s: %w", e.Source, err)
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if _, err := appendSync(filepath.Join(s.root, "errors.jsonl"), append(line, '\n')); err != nil {
		return fmt.Errorf("appending error entry from %s: %w", e.Source, err)
	}
	if s.git != nil {
		msg := fmt.Sprintf("ssot: error from %s", e.Source)
		if err := s.git.commit(context.Background(), msg, filepath.Join(s.root, "errors.jsonl")); err != nil {
			return fmt.Errorf("committing error entry from %s: %w", e.Source, err)
		}
	}
	return nil
}

// Errors returns every entry of errors.jsonl, oldest first.
func (s *Store) Errors() ([]ErrorEntry, error) {
	data, err := os.ReadFile(filepath.Join(s.root, "errors.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading errors.jsonl: %w", err)
	}
	var out []ErrorEntry
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		var e ErrorEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			continue // a line torn by a crash
		}
		out = append(out, e)
	}
	return out, nil
}
