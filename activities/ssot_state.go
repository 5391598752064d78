package activities

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The files of a task's state: task.json, the inode its next state is
// written into, and the third name swapByLink needs for a moment.
const (
	taskFile  = "task.json"
	spareFile = ".task.json.spare"
	prevFile  = ".task.json.prev"
)

// exchange swaps two files in one rename, or returns an error that is
// errors.ErrUnsupported; a variable so tests can take the other way.
var exchange = exchangeFiles

// link is os.Link, replaced in tests by a file system without hard links.
var link = os.Link

// errNoLink marks a file system that cannot hard-link, where swapByLink
// cannot stand in for the exchange either.
var errNoLink = errors.New("no hard links")

// writeTask replaces task.json when its content changed.
//
// Creating or truncating a file allocates blocks and unlinking one frees
// them, which costs ~300 µs on a file system mounted with discard, against
// ~10 µs to write a block in place. So a state is written in place into
// the spare, which was task.json until the last write, and the two swap
// names: readers see one whole state or the other, and no block is
// allocated or freed unless the state crosses a block boundary. The
// writer locks the spare while it writes, as a reader that opened it when
// it was task.json may still be reading it; Task takes that lock. Not
// synced: task.json is rewritten on every batch, and the journal holds
// what a power cut must not lose.
func (s *Store) writeTask(taskID string, t *taskLog, state json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, state, "", "  "); err != nil {
		return fmt.Errorf("encoding state of task %s: %w", taskID, err)
	}
	buf.WriteByte('\n')
	sum := sha256.Sum256(buf.Bytes())
	if sum == t.state {
		return nil
	}
	dir := s.taskDir(taskID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing state of task %s: %w", taskID, err)
	}
	path, spare := filepath.Join(dir, taskFile), filepath.Join(dir, spareFile)
	err := overwrite(spare, buf.Bytes())
	if err == nil {
		err = s.swap(spare, path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		// The task's first state: it becomes task.json, and a copy the
		// spare, so that later writes create no file.
		err = os.Rename(spare, path)
		if err == nil {
			err = overwrite(spare, buf.Bytes())
		}
	}
	if err != nil {
		return fmt.Errorf("writing state of task %s: %w", taskID, err)
	}
	t.state = sum
	return nil
}

// overwrite writes data over the content of path in place, under an
// exclusive lock, creating the file when missing.
func overwrite(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	err = lockFile(f, true)
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// swap gives spare's file the name path and, where the file system
// allows, path's file the name spare. On a file system with neither
// exchange nor hard links, spare simply replaces path, and the next write
// creates a new spare.
func (s *Store) swap(spare, path string) error {
	if !s.noExchange.Load() {
		err := exchange(spare, path)
		if !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		s.noExchange.Store(true)
	}
	if !s.noLink.Load() {
		err := swapByLink(spare, path)
		if !errors.Is(err, errNoLink) {
			return err
		}
		s.noLink.Store(true)
	}
	return os.Rename(spare, path)
}

// swapByLink swaps with three steps where one rename cannot exchange: a
// third name keeps path's file while spare's takes its place. A crash in
// between leaves that name, which loadState removes.
func swapByLink(spare, path string) error {
	prev := filepath.Join(filepath.Dir(path), prevFile)
	if err := link(path, prev); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("%w: %w", errNoLink, err)
	}
	if err := os.Rename(spare, path); err != nil {
		return err
	}
	return os.Rename(prev, spare)
}

// loadState removes what interrupted writes left in a task's directory
// and notes the digest of its task.json.
func (s *Store) loadState(taskID string, t *taskLog) error {
	dir := s.taskDir(taskID)
	for _, d := range []string{dir, filepath.Join(dir, "messages")} {
		if err := removeLeftovers(d); err != nil {
			return fmt.Errorf("cleaning up task %s: %w", taskID, err)
		}
	}
	t.state = [sha256.Size]byte{}
	data, err := os.ReadFile(filepath.Join(dir, taskFile))
	switch {
	case err == nil:
		t.state = sha256.Sum256(data)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("reading state of task %s: %w", taskID, err)
	}
	return nil
}

// removeLeftovers removes the temporary files interrupted writes left in
// dir, and the third name of swapByLink.
func removeLeftovers(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, ".tmp-") || n == prevFile {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// Task returns a task's current state, as last recorded.
func (s *Store) Task(taskID string) (json.RawMessage, error) {
	if !validName(taskID) {
		return nil, fmt.Errorf("reading task %q: %w", taskID, ErrNotFound)
	}
	dir := s.taskDir(taskID)
	data, err := readLocked(filepath.Join(dir, taskFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading task %s: %w", taskID, err)
	}
	if json.Valid(data) {
		return data, nil
	}
	// Torn by a power cut (see Store): the spare holds an older state.
	if old, err := readLocked(filepath.Join(dir, spareFile)); err == nil && json.Valid(old) {
		return old, nil
	}
	return nil, fmt.Errorf("reading task %s: task.json is torn; the task's next state write replaces it", taskID)
}

// readLocked reads a file under a shared lock, so that a write in place
// cannot change it meanwhile.
func readLocked(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := lockFile(f, false); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}
