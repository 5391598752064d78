//go:build !unix

package runner

import (
	"errors"
	"os/exec"
	"syscall"
)

// Process groups and pid files are implemented for Unix only.

func newGroup(cmd *exec.Cmd) {}

func signalGroup(pgid int, sig syscall.Signal) {}

func groupAlive(pgid int) bool { return false }

func writePIDFile(dir string, pid int, argv []string, _ ...*RunOwner) (string, error) {
	return "", errors.New("pid files are supported on Unix only")
}

// Reap is supported on Unix only.
func Reap(pidDir string) ([]int, error) {
	return nil, errors.New("runner.Reap is supported on Unix only")
}

// ReapRuns is supported on Unix only.
func ReapRuns(pidDir string) ([]Reaped, error) {
	return nil, errors.New("runner.ReapRuns is supported on Unix only")
}

// NoteAttempt is supported on Unix only.
func NoteAttempt(pidDir string, owner *RunOwner) (func(), error) {
	return func() {}, errors.New("attempt records are supported on Unix only")
}
