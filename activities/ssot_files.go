package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteDiff keeps a result's diff at tasks/<task_id>/diffs/<msg_id>.diff
// and returns its path. Writing the same diff again changes nothing.
func (s *Store) WriteDiff(taskID, msgID string, diff []byte) (string, error) {
	if !validName(taskID) || !validName(msgID) {
		return "", invalid("diff of %q in task %q: id cannot name an SSOT file", msgID, taskID)
	}
	path := filepath.Join(s.taskDir(taskID), "diffs", msgID+".diff")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, diff) {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("writing diff %s of task %s: %w", msgID, taskID, err)
	}
	if err := writeAtomic(path, diff, true); err != nil {
		return "", fmt.Errorf("writing diff %s of task %s: %w", msgID, taskID, err)
	}
	if s.git != nil {
		msg := fmt.Sprintf("ssot: diff %s (%s)", msgID, taskID)
		if err := s.git.commit(context.Background(), msg, path); err != nil {
			return "", fmt.Errorf("committing diff %s of task %s: %w", msgID, taskID, err)
		}
	}
	return path, nil
}

// ciRun is a command CI result cached in the SSOT.
type ciRun struct {
	Commit     string         `json:"commit"`
	Argv       []string       `json:"argv"`
	ExitCode   int            `json:"exit_code"`
	Duration   string         `json:"duration"`
	FinishedAt string         `json:"finished_at"`
	Result     CIStatusResult `json:"result"`
}

func (s *Store) ciDir(taskID string) string { return filepath.Join(s.taskDir(taskID), "ci") }

// ciLogPath is where the output of a command CI run is kept.
func (s *Store) ciLogPath(taskID, commit string) string {
	return filepath.Join(s.ciDir(taskID), commit+".log")
}

// cachedCI returns the cached run of commit, if there is one.
func (s *Store) cachedCI(taskID, commit string) (ciRun, bool, error) {
	data, err := os.ReadFile(filepath.Join(s.ciDir(taskID), commit+".json"))
	if errors.Is(err, os.ErrNotExist) {
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

// saveCI keeps a finished run; its log is already at ciLogPath.
func (s *Store) saveCI(taskID string, run ciRun) error {
	data, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding CI result of %s in task %s: %w", run.Commit, taskID, err)
	}
	path := filepath.Join(s.ciDir(taskID), run.Commit+".json")
	if err := writeAtomic(path, append(data, '\n'), true); err != nil {
		return fmt.Errorf("writing CI result of %s in task %s: %w", run.Commit, taskID, err)
	}
	if s.git != nil {
		msg := fmt.Sprintf("ssot: ci %s %s (%s)", run.Result.State, short(run.Commit), taskID)
		if err := s.git.commit(context.Background(), msg, path, s.ciLogPath(taskID, run.Commit)); err != nil {
			return fmt.Errorf("committing CI result of %s in task %s: %w", run.Commit, taskID, err)
		}
	}
	return nil
}
