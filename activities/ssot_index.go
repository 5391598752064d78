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

// taskLog serialises the writes of one task and caches which records its
// journal holds.
type taskLog struct {
	mu      sync.Mutex
	loaded  bool
	indexed map[string]bool
}

// indexLine is one line of index.jsonl: a whole StoredRecord, or, in
// lines written before the index became the journal, only its id and
// kind, whose record file is then the source.
type indexLine struct {
	StoredRecord
	raw []byte // the line as stored, without its newline
}

// full reports whether the line carries its record.
func (l indexLine) full() bool { return len(l.Body) > 0 }

func (s *Store) taskLog(taskID string) *taskLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tasks[taskID]
	if t == nil {
		t = &taskLog{}
		s.tasks[taskID] = t
	}
	return t
}

func (s *Store) indexPath(taskID string) string {
	return filepath.Join(s.taskDir(taskID), "index.jsonl")
}

// loadIndex reads a task's journal once per process and heals what a
// crash may have left: a torn last line is cut off, temporary files are
// removed, record files missing from the journal are appended to it, and
// record files the journal holds but a power cut lost or tore are
// rewritten from it.
func (s *Store) loadIndex(taskID string, t *taskLog) error {
	if t.loaded {
		return nil
	}
	lines, orphans, err := s.scanTask(taskID, true)
	if err != nil {
		return err
	}
	t.indexed = make(map[string]bool, len(lines)+len(orphans))
	for _, l := range lines {
		t.indexed[l.ID] = true
	}
	if len(orphans) > 0 {
		heal := make([]indexLine, len(orphans))
		for i, r := range orphans {
			heal[i] = indexLine{StoredRecord: r}
		}
		if err := s.appendIndex(taskID, t, heal); err != nil {
			return err
		}
		lines = append(lines, heal...)
	}
	if err := s.restoreFiles(taskID, lines); err != nil {
		return err
	}
	t.loaded = true
	return nil
}

// restoreFiles rewrites every record file that is not the bytes its
// journal line makes. Record files are not synced; this is what makes
// that safe.
func (s *Store) restoreFiles(taskID string, lines []indexLine) error {
	made := false
	for _, l := range lines {
		if !l.full() || !validName(l.ID) {
			continue
		}
		want, err := recordFile(l.raw)
		if err != nil {
			return fmt.Errorf("restoring record %s of task %s: %w", l.ID, taskID, err)
		}
		path := s.recordPath(taskID, l.ID)
		if got, err := os.ReadFile(path); err == nil && bytes.Equal(got, want) {
			continue
		}
		if !made {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fmt.Errorf("restoring records of task %s: %w", taskID, err)
			}
			made = true
		}
		if err := writeFile(path, want, false); err != nil {
			return fmt.Errorf("restoring record %s of task %s: %w", l.ID, taskID, err)
		}
	}
	return nil
}

// recordFile is the content of a record's file: its journal line, indented.
func recordFile(line []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, line, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// writeRecords keeps recs: their files are written unsynced, then their
// lines are appended to the journal with one fsync.
func (s *Store) writeRecords(taskID string, t *taskLog, recs []StoredRecord) error {
	lines := make([]indexLine, len(recs))
	for i, r := range recs {
		raw, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encoding record %s of task %s: %w", r.ID, taskID, err)
		}
		lines[i] = indexLine{StoredRecord: r, raw: raw}
	}
	if err := os.MkdirAll(filepath.Join(s.taskDir(taskID), "messages"), 0o755); err != nil {
		return fmt.Errorf("writing records of task %s: %w", taskID, err)
	}
	for _, l := range lines {
		data, err := recordFile(l.raw)
		if err == nil {
			err = writeFile(s.recordPath(taskID, l.ID), data, false)
		}
		if err != nil {
			return fmt.Errorf("writing record %s of task %s: %w", l.ID, taskID, err)
		}
	}
	return s.appendIndex(taskID, t, lines)
}

// scanTask returns the journal lines of a task and the records whose
// files are not in it, oldest first. With repair it also truncates a torn
// last line and removes leftover temporary files and record files that do
// not parse; readers pass false.
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
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("reading record %s of task %s: %w", id, taskID, err)
		}
		if !json.Valid(data) {
			// Torn by a power cut: written unsynced by a call whose
			// journal line never became durable, so a call that did not
			// succeed; its retry writes the file again.
			if repair {
				os.Remove(path)
			}
			continue
		}
		var r StoredRecord
		if json.Unmarshal(data, &r) != nil || r.ID != id || r.Kind == "" || len(r.Body) == 0 {
			continue // not a record this store wrote
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

// readIndex reads index.jsonl. A last line without its newline was torn
// by a crash: it is ignored, and with repair cut off the file.
func readIndex(path string, repair bool) ([]indexLine, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	if end < len(data) && repair {
		if err := os.Truncate(path, int64(end)); err != nil {
			return nil, err
		}
	}
	return parseIndex(data[:end])
}

// parseIndex decodes complete index lines, one per id at the place of its
// first line. A record kept again after its file was removed by hand
// brings the line that carries it.
func parseIndex(data []byte) ([]indexLine, error) {
	var lines []indexLine
	at := map[string]int{}
	for raw := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(raw) == 0 {
			continue
		}
		l := indexLine{raw: raw}
		if err := json.Unmarshal(raw, &l.StoredRecord); err != nil {
			return nil, fmt.Errorf("decoding index line %q: %w", raw, err)
		}
		i, ok := at[l.ID]
		switch {
		case !ok:
			at[l.ID] = len(lines)
			lines = append(lines, l)
		case !lines[i].full() && l.full():
			lines[i] = l
		}
	}
	return lines, nil
}

// journalRecord returns record id from a task's journal, when a line
// there carries it.
func (s *Store) journalRecord(taskID, id string) (StoredRecord, bool, error) {
	data, err := os.ReadFile(s.indexPath(taskID))
	if errors.Is(err, os.ErrNotExist) {
		return StoredRecord{}, false, nil
	}
	if err != nil {
		return StoredRecord{}, false, fmt.Errorf("reading the index of task %s: %w", taskID, err)
	}
	quoted, _ := json.Marshal(id)
	if !bytes.Contains(data, quoted) {
		return StoredRecord{}, false, nil
	}
	lines, err := parseIndex(data[:bytes.LastIndexByte(data, '\n')+1])
	if err != nil {
		return StoredRecord{}, false, fmt.Errorf("reading the index of task %s: %w", taskID, err)
	}
	for _, l := range lines {
		if l.ID == id && l.full() {
			return l.StoredRecord, true, nil
		}
	}
	return StoredRecord{}, false, nil
}

// appendIndex appends lines to a task's journal in one write and fsyncs
// it. The first append also fsyncs the task's directory and tasks/, so
// the journal itself survives a power cut.
func (s *Store) appendIndex(taskID string, t *taskLog, lines []indexLine) error {
	var buf bytes.Buffer
	for i := range lines {
		if lines[i].raw == nil {
			raw, err := json.Marshal(lines[i].StoredRecord)
			if err != nil {
				return fmt.Errorf("encoding the index of task %s: %w", taskID, err)
			}
			lines[i].raw = raw
		}
		buf.Write(lines[i].raw)
		buf.WriteByte('\n')
	}
	if err := os.MkdirAll(s.taskDir(taskID), 0o755); err != nil {
		return fmt.Errorf("appending to the index of task %s: %w", taskID, err)
	}
	created, err := appendSync(s.indexPath(taskID), buf.Bytes())
	if err == nil && created {
		err = syncDir(filepath.Join(s.root, "tasks"))
	}
	if err != nil {
		return fmt.Errorf("appending to the index of task %s: %w", taskID, err)
	}
	for _, l := range lines {
		t.indexed[l.ID] = true
	}
	return nil
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
