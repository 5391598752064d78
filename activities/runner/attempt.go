//go:build unix

package runner

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// NoteAttempt writes, in pidDir beside the pid files, a record of a run
// whose activity has started but whose CLI may not have yet: it waits for
// a runner slot, or its worktree is being made. A worker that starts
// after this one died finds it with ReapRuns (a Reaped with PID 0), so a
// run killed before its CLI started is recovered as fast as one killed
// while it ran. The returned function removes the record; call it when
// the activity ends.
func NoteAttempt(pidDir string, owner *RunOwner) (func(), error) {
	if owner == nil || owner.WorkflowID == "" || owner.ActivityID == "" {
		return func() {}, errors.New("an attempt record needs the run's workflow and activity ids")
	}
	if err := os.MkdirAll(pidDir, 0o755); err != nil {
		return func() {}, fmt.Errorf("creating pid dir %s: %w", pidDir, err)
	}
	sum := sha256.Sum256([]byte(owner.WorkflowID + "\x00" + owner.RunID + "\x00" + owner.ActivityID))
	path := filepath.Join(pidDir, fmt.Sprintf("attempt-%x.json", sum[:8]))
	b, _ := json.Marshal(pidFile{Owner: owner})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return func() {}, fmt.Errorf("writing attempt record %s: %w", path, err)
	}
	return func() { _ = os.Remove(path) }, nil
}
