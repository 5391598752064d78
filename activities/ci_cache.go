package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ampflow/ampflow/activities/ssot"
)

// ciRun is a command CI result kept in the store.
type ciRun struct {
	Commit     string         `json:"commit"`
	Argv       []string       `json:"argv"`
	ExitCode   int            `json:"exit_code"`
	Duration   string         `json:"duration"`
	FinishedAt string         `json:"finished_at"`
	Result     CIStatusResult `json:"result"`
}

// kept is the run's result as Status answers it: its commit, and its
// whole log kept beside the task's records (saveCI keeps it first).
func (r ciRun) kept() CIStatusResult {
	res := r.Result
	res.Commit, res.LogKept = r.Commit, true
	return res
}

// ciName and ciLogName are the store's names of a command CI run's
// result and log.
func ciName(commit string) string    { return "ci/" + commit + ".json" }
func ciLogName(commit string) string { return ssot.CILogName(commit) }

// cachedCI returns the kept run of commit, if there is one.
func (s *TaskRecord) cachedCI(ctx context.Context, taskID, commit string) (ciRun, bool, error) {
	data, err := s.Store.File(ctx, taskID, ciName(commit))
	if errors.Is(err, ssot.ErrNotFound) {
		return ciRun{}, false, nil
	}
	if err != nil {
		return ciRun{}, false, fmt.Errorf("reading CI result of %s in task %s: %w", commit, taskID, err)
	}
	var r ciRun
	if err := json.Unmarshal(data, &r); err != nil {
		return ciRun{}, false, fmt.Errorf("decoding CI result of %s in task %s: %w", commit, taskID, err)
	}
	return r, true, nil
}

// saveCI keeps a finished run and its log, the log first: a result is
// only ever read with its log beside it.
func (s *TaskRecord) saveCI(ctx context.Context, taskID string, run ciRun, logPath string) error {
	log, err := readTail(logPath, ssot.MaxFileSize)
	if err != nil {
		return fmt.Errorf("reading the CI log of %s in task %s: %w", ShortHash(run.Commit), taskID, err)
	}
	if err := s.Store.PutFile(ctx, taskID, ciLogName(run.Commit), log); err != nil {
		return err
	}
	data, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding CI result of %s in task %s: %w", run.Commit, taskID, err)
	}
	return s.Store.PutFile(ctx, taskID, ciName(run.Commit), append(data, '\n'))
}

// CILog is the output of the command CI run of commit in a task.
func (s *TaskRecord) CILog(ctx context.Context, taskID, commit string) ([]byte, error) {
	return s.Store.File(ctx, taskID, ciLogName(commit))
}

// readTail reads a file, or its last max bytes after a line saying so
// when it is longer.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() <= max {
		return io.ReadAll(f)
	}
	note := fmt.Appendf(nil, "ampflow: the log had %d bytes; only its last ones are kept\n", fi.Size())
	keep := max - int64(len(note))
	if _, err := f.Seek(-keep, io.SeekEnd); err != nil {
		return nil, err
	}
	rest, err := io.ReadAll(f)
	return append(note, rest...), err
}
