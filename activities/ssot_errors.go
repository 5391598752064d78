package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrorEntry is one refused input, kept in errors.jsonl.
type ErrorEntry struct {
	Time   time.Time `json:"time"`
	Remote string    `json:"remote,omitempty"` // client address, when from the network
	Source string    `json:"source"`           // http, cli, …
	Reason string    `json:"reason"`
	Raw    string    `json:"raw,omitempty"` // the refused input, cut at maxErrorRaw bytes
}

const maxErrorRaw = 64 << 10

// Bounds of the error log.
const (
	// DefaultErrorLogMax is the size at which errors.jsonl is rotated.
	DefaultErrorLogMax = 64 << 20
	// ErrorLogFiles is how many files the error log keeps: errors.jsonl,
	// errors.jsonl.1 and errors.jsonl.2, newest first.
	ErrorLogFiles = 3
	// errorQueue is how many entries wait for the writer before more are
	// dropped; each is at most maxErrorRaw and a little.
	errorQueue = 1024
)

// ErrErrorLogFull is returned by AppendError when the writer is that far
// behind: the entry is dropped rather than the caller kept waiting.
var ErrErrorLogFull = errors.New("the SSOT error log is behind; entry dropped")

// errorLog is the one goroutine that writes errors.jsonl, and its queue.
type errorLog struct {
	once  sync.Once
	queue chan errorJob
}

// errorJob is an entry to write, or (done set) a flush.
type errorJob struct {
	line []byte
	done chan error
}

// AppendError queues a refused input for errors.jsonl and returns at once:
// a slow disk or git never holds up the request that was refused. The
// writer appends and fsyncs each entry and rotates the file at
// ErrorLogMax. With the queue full the entry is dropped (ErrErrorLogFull).
// FlushErrors waits for the queue.
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
	select {
	case s.errorQueue() <- errorJob{line: append(line, '\n')}:
		return nil
	default:
		return fmt.Errorf("appending error entry from %s: %w", e.Source, ErrErrorLogFull)
	}
}

// FlushErrors waits until every entry queued before it is written and
// returns the first write error since the last flush.
func (s *Store) FlushErrors() error {
	done := make(chan error, 1)
	s.errorQueue() <- errorJob{done: done}
	return <-done
}

func (s *Store) errorQueue() chan errorJob {
	s.errs.once.Do(func() {
		s.errs.queue = make(chan errorJob, errorQueue)
		go s.writeErrors(s.errs.queue)
	})
	return s.errs.queue
}

// writeErrors writes queued entries for the life of the process, all
// those waiting in one append and one fsync, so the writer keeps up with
// a flood of refusals.
func (s *Store) writeErrors(queue <-chan errorJob) {
	var first error
	for job := range queue {
		batch := []errorJob{job}
	more:
		for len(batch) < errorQueue {
			select {
			case j := <-queue:
				batch = append(batch, j)
			default:
				break more
			}
		}
		var lines [][]byte
		for _, j := range batch {
			if j.done == nil {
				lines = append(lines, j.line)
				continue
			}
			if err := s.writeErrorLines(lines); err != nil && first == nil {
				first = err
			}
			lines = nil
			j.done <- first
			first = nil
		}
		if err := s.writeErrorLines(lines); err != nil && first == nil {
			first = err
		}
	}
}

// writeErrorLines appends lines to errors.jsonl, rotating it before it
// would pass ErrorLogMax.
func (s *Store) writeErrorLines(lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	path := filepath.Join(s.root, "errors.jsonl")
	limit := s.opts.ErrorLogMax
	if limit <= 0 {
		limit = DefaultErrorLogMax
	}
	size := int64(0)
	created := false
	switch st, err := os.Stat(path); {
	case err == nil:
		size = st.Size()
	case errors.Is(err, os.ErrNotExist):
		created = true
	default:
		return fmt.Errorf("appending to the error log: %w", err)
	}
	var chunk []byte
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if err := appendSync(path, chunk); err != nil {
			return fmt.Errorf("appending to the error log: %w", err)
		}
		if created {
			if err := syncDir(s.root); err != nil {
				return fmt.Errorf("appending to the error log: %w", err)
			}
			created = false
		}
		size += int64(len(chunk))
		chunk = chunk[:0]
		return nil
	}
	for _, line := range lines {
		if size+int64(len(chunk)+len(line)) > limit && size+int64(len(chunk)) > 0 {
			if err := flush(); err != nil {
				return err
			}
			if err := s.rotateErrors(path); err != nil {
				return fmt.Errorf("rotating %s: %w", path, err)
			}
			size, created = 0, true
		}
		chunk = append(chunk, line...)
	}
	if err := flush(); err != nil {
		return err
	}
	// The error log stays out of the git mirror: each batch would commit
	// a new copy, and its 64 MiB bound would not hold in the history.
	return nil
}

// rotateErrors shifts errors.jsonl to errors.jsonl.1 and so on, dropping
// the oldest beyond ErrorLogFiles.
func (s *Store) rotateErrors(path string) error {
	if err := os.Remove(fmt.Sprintf("%s.%d", path, ErrorLogFiles-1)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for i := ErrorLogFiles - 2; i >= 1; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return os.Rename(path, path+".1")
}

// Errors returns the entries of the error log's files, oldest first, once
// the entries queued before the call are written.
func (s *Store) Errors() ([]ErrorEntry, error) {
	if err := s.FlushErrors(); err != nil {
		return nil, fmt.Errorf("reading errors.jsonl: %w", err)
	}
	var out []ErrorEntry
	for i := ErrorLogFiles - 1; i >= 0; i-- {
		name := "errors.jsonl"
		if i > 0 {
			name = fmt.Sprintf("errors.jsonl.%d", i)
		}
		data, err := os.ReadFile(filepath.Join(s.root, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
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
	}
	return out, nil
}
