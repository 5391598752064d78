//go:build unix

package devserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the name of the file inside Options.DataDir that a running
// server holds locked, so a second server cannot open the same database.
const LockFile = "temporal.lock"

// ErrDataDirInUse is wrapped by the error Start returns when another server,
// in this process or another, runs on the same data directory.
var ErrDataDirInUse = errors.New("data directory in use by another dev server")

// lockDataDir takes an exclusive lock that the kernel drops when the process
// dies, so a killed server never leaves a stale lock behind.
func lockDataDir(dir string) (unlock func() error, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked", ErrDataDirInUse, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return f.Close, nil
}
