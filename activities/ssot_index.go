package activities

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// taskLog serialises the writes of one task and caches its index.
type taskLog struct {
	mu      sync.Mutex
	loaded  bool
	indexed map[string]bool
}

// indexLine is one line of index.jsonl.
type indexLine struct {
	ID   string     `json:"id"`
	Kind RecordKind `json:"kind"`
}

func (s *Store) taskLog(taskID string) *taskLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tasks[taskID]
	if t == nil {
		t = &taskLog{indexed: map[string]bool{}}
		s.tasks[taskID] = t
	}
	return t
}

func (s *Store) indexPath(taskID string) string {
	return filepath.Join(s.taskDir(taskID), "index.jsonl")
}

// loadIndex reads a task's index once per process and heals what a crash
// may have left: a torn last line is cut off, temporary files are removed,
// and records missing from the index are appended to it.
func (s *Store) loadIndex(taskID string, t *taskLog) error {
	if t.loaded {
		return nil
	}
	lines, orphans, err := s.scanTask(taskID, true)
	if err != nil {
		return err
	}
	for _, l := range lines {
		t.indexed[l.ID] = true
	}
	if len(orphans) > 0 {
		heal := make([]indexLine, len(orphans))
		for i, r := range orphans {
			heal[i] = indexLine{ID: r.ID, Kind: r.Kind}
		}
		if err := s.appendIndex(taskID, t, heal); err != nil {
			return err
		}
	}
	t.loaded = true
	return nil
}

// scanTask returns the index lines of a task and the records that are not
// in it, oldest first. With repair it also truncates a torn last index
// line and removes leftover temporary files; readers pass false.
func (s *Store) scanTask(taskID string, repair bool) ([]indexLine, []StoredRecord, error) {
	lines, err := readIndex(s.indexPath(taskID), repair)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the index of task %s: %w", taskID, err)
	}
	in := make(map[string]bool, len(lines))
	for _, l := range lines {
		in[l.ID] = true
	}
	dir := filepath.Join(s.taskDir(taskID), "messages")
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("listing records of task %s: %w", taskID, err)
	}
	var orphans []StoredRecord
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".tmp-") {
			if repair {
				os.Remove(filepath.Join(dir, name))
			}
			continue
		}
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || in[id] || strings.HasPrefix(name, ".") {
			continue
		}
		r, err := readRecord(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, fmt.Errorf("reading record %s of task %s: %w", id, taskID, err)
		}
		orphans = append(orphans, r)
	}
	sort.Slice(orphans, func(i, j int) bool {
		if !orphans[i].RecordedAt.Equal(orphans[j].RecordedAt) {
			return orphans[i].RecordedAt.Before(orphans[j].RecordedAt)
		}
		return orphans[i].ID < orphans[j].ID
	})
	return lines, orphans, nil
}

// readIndex parses index.jsonl. A last line without its newline was torn
// by a crash: it is ignored, and with repair cut off the file.
func readIndex(path string, repair bool) ([]indexLine, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if end := bytes.LastIndexByte(data, '\n') + 1; end < len(data) {
		data = data[:end]
		if repair {
			if err := os.Truncate(path, int64(end)); err != nil {
				return nil, err
			}
		}
	}
	var lines []indexLine
	seen := map[string]bool{}
	for raw := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(raw) == 0 {
			continue
		}
		var l indexLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("decoding index line %q: %w", raw, err)
		}
		if !seen[l.ID] {
			seen[l.ID] = true
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// appendIndex appends lines to a task's index in one write and fsyncs it.
func (s *Store) appendIndex(taskID string, t *taskLog, lines []indexLine) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("encoding the index of task %s: %w", taskID, err)
		}
	}
	if err := os.MkdirAll(s.taskDir(taskID), 0o755); err != nil {
		return fmt.Errorf("appending to the index of task %s: %w", taskID, err)
	}
	if err := appendSync(s.indexPath(taskID), buf.Bytes()); err != nil {
		return fmt.Errorf("appending to the index of task %s: %w", taskID, err)
	}
	for _, l := range lines {
		t.indexed[l.ID] = true
	}
	return nil
}

// appendSync appends data to path (created when missing) and fsyncs it;
// a new file's directory is fsynced too.
func appendSync(path string, data []byte) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && errors.Is(statErr, os.ErrNotExist) {
		err = syncDir(filepath.Dir(path))
	}
	return err
}

// readAll reads a small file, mapping absence to ErrNotFound.
func readAll(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", what, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return data, nil
}
