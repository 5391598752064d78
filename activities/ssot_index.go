package activities

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// taskLog serialises the writes of one task and caches, once per process,
// what its journal keeps, so that Record tells a retry from a conflict
// without reading the disk.
type taskLog struct {
	mu     sync.Mutex
	loaded bool
	kept   map[string]keptEntry
	// state is the digest of task.json as last read or written; zero
	// when there is none.
	state [sha256.Size]byte
	// durable is set once this process has synced the journal and the
	// directory entries that lead to it.
	durable bool
}

// keptEntry is what the cache holds of one journaled record.
type keptEntry struct {
	kind RecordKind
	sum  [sha256.Size]byte // of the body as compactBody makes it
	full bool              // false for an older {"id","kind"} line
}

// indexLine is one line of index.jsonl: a whole StoredRecord, or, in
// lines written before the index became the journal, only its id and
// kind, whose record file is then the source.
type indexLine struct{ StoredRecord }

// full reports whether the line carries its record.
func (l indexLine) full() bool { return len(l.Body) > 0 }

// compactBody returns a body as a journal line holds it, compacted with
// <, > and & escaped as json.Marshal does, and its digest, so that a
// retry's body and the kept one compare equal byte for byte.
func compactBody(body json.RawMessage) (json.RawMessage, [sha256.Size]byte, error) {
	c, err := json.Marshal(body)
	if err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	return c, sha256.Sum256(c), nil
}

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

// loadIndex fills a task's cache from its journal once per process and
// cleans up what a crash may have left: a torn last line is cut off, and
// temporary files are removed.
func (s *Store) loadIndex(taskID string, t *taskLog) error {
	if t.loaded {
		return nil
	}
	lines, err := readIndex(s.indexPath(taskID), true)
	if err != nil {
		return fmt.Errorf("reading the index of task %s: %w", taskID, err)
	}
	// The journal may hold lines a killed process wrote but never
	// synced. A retry finds its records there and writes nothing, so
	// they are made durable here, before any call reports them kept.
	if _, err := os.Stat(s.indexPath(taskID)); err == nil {
		if err := s.syncJournal(taskID, t); err != nil {
			return fmt.Errorf("syncing the index of task %s: %w", taskID, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the index of task %s: %w", taskID, err)
	}
	t.kept = make(map[string]keptEntry, len(lines))
	for _, l := range lines {
		k := keptEntry{kind: l.Kind, full: l.full()}
		if k.full {
			if _, k.sum, err = compactBody(l.Body); err != nil {
				return fmt.Errorf("reading record %s of task %s: %w", l.ID, taskID, err)
			}
		}
		t.kept[l.ID] = k
	}
	if err := s.loadState(taskID, t); err != nil {
		return err
	}
	t.loaded = true
	return nil
}

// sameAsKept compares e, whose compacted body has digest sum, with the
// record kept under its id. found is false for an older line whose file
// was removed by hand.
func (s *Store) sameAsKept(taskID string, e RecordEntry, k keptEntry, sum [sha256.Size]byte) (same, found bool, err error) {
	if k.full && k.kind != e.Kind {
		return false, true, nil
	}
	if k.full && k.sum == sum {
		return true, true, nil
	}
	// Equal values may be spelled otherwise (key order, numbers), and
	// older lines carry no body: compare with the kept record itself.
	r, found, err := s.journalRecord(taskID, e.ID)
	if err != nil || !found {
		return false, found, err
	}
	return r.Kind == e.Kind && sameJSON(r.Body, e.Body), true, nil
}

// writeRecords appends recs, whose bodies compactBody made, to the
// task's journal in one write and fsyncs it. Until the journal is known
// durable it also fsyncs the task's directory and tasks/, so the journal
// itself survives a power cut.
func (s *Store) writeRecords(taskID string, t *taskLog, recs []StoredRecord) error {
	if len(recs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, r := range recs {
		raw, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encoding record %s of task %s: %w", r.ID, taskID, err)
		}
		buf.Write(raw)
		buf.WriteByte('\n')
	}
	if err := os.MkdirAll(s.taskDir(taskID), 0o755); err != nil {
		return fmt.Errorf("appending to the index of task %s: %w", taskID, err)
	}
	err := appendSync(s.indexPath(taskID), buf.Bytes())
	if err == nil && !t.durable {
		err = s.syncDirs(taskID, t)
	}
	if err != nil {
		return fmt.Errorf("appending to the index of task %s: %w", taskID, err)
	}
	for _, r := range recs {
		t.kept[r.ID] = keptEntry{kind: r.Kind, sum: sha256.Sum256(r.Body), full: true}
	}
	return nil
}

// syncJournal fsyncs a task's existing journal and the directories above it.
func (s *Store) syncJournal(taskID string, t *taskLog) error {
	f, err := os.Open(s.indexPath(taskID))
	if err != nil {
		return err
	}
	err = fsync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return s.syncDirs(taskID, t)
}

// syncDirs fsyncs the task's directory and tasks/, so the journal's
// directory entry survives a power cut, and marks the journal durable.
func (s *Store) syncDirs(taskID string, t *taskLog) error {
	if err := syncDir(s.taskDir(taskID)); err != nil {
		return err
	}
	if err := syncDir(filepath.Join(s.root, "tasks")); err != nil {
		return err
	}
	t.durable = true
	return nil
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
// first line. A record kept again after the file of its older line was
// removed by hand brings the line that carries it.
func parseIndex(data []byte) ([]indexLine, error) {
	var lines []indexLine
	at := map[string]int{}
	for raw := range bytes.SplitSeq(data, []byte{'\n'}) {
		if len(raw) == 0 {
			continue
		}
		var l indexLine
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

// lineRecord returns the record a journal line keeps: the line itself or,
// for an older line, its file. found is false when that file is gone.
func (s *Store) lineRecord(taskID string, l indexLine) (r StoredRecord, found bool, err error) {
	if l.full() {
		return l.StoredRecord, true, nil
	}
	path := s.recordPath(taskID, l.ID)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return StoredRecord{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil {
		return StoredRecord{}, false, fmt.Errorf("reading record %s of task %s: %w", l.ID, taskID, err)
	}
	return r, true, nil
}

// journalRecord returns record id of a task, when its journal keeps it.
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
		if l.ID == id {
			return s.lineRecord(taskID, l)
		}
	}
	return StoredRecord{}, false, nil
}
