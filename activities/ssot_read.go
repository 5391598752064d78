package activities

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

// History returns a task's records in the order they were written. It
// never writes: a journal line a crash tore is ignored.
func (s *Store) History(taskID string) ([]StoredRecord, error) {
	if !validName(taskID) {
		return nil, fmt.Errorf("reading history of task %q: %w", taskID, ErrNotFound)
	}
	if _, err := os.Stat(s.taskDir(taskID)); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading history of task %s: %w", taskID, ErrNotFound)
	}
	lines, err := readIndex(s.indexPath(taskID), false)
	if err != nil {
		return nil, fmt.Errorf("reading the index of task %s: %w", taskID, err)
	}
	out := make([]StoredRecord, 0, len(lines))
	for _, l := range lines {
		r, found, err := s.lineRecord(taskID, l)
		if err != nil {
			return nil, err
		}
		if found { // else the file of an older line was removed by hand
			out = append(out, r)
		}
	}
	return out, nil
}

// Get returns the record with the given msg_id (or decision/event id)
// from any task. A msg_id "{type}-{task_id}-{unix_ms}" names its task, so
// that task's journal is read first; then every other task's.
func (s *Store) Get(id string) (StoredRecord, error) {
	if !validName(id) {
		return StoredRecord{}, fmt.Errorf("reading record %q: %w", id, ErrNotFound)
	}
	named, ok := taskOfMsgID(id)
	if !ok || !validName(named) {
		named = ""
	}
	if named != "" {
		if r, found, err := s.journalRecord(named, id); found || err != nil {
			return r, wrapGet(id, err)
		}
	}
	tasks, err := s.Tasks()
	if err != nil {
		return StoredRecord{}, err
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
