//go:build !unix

package devserver

import (
	"errors"
	"fmt"
	"os"
)

// LockFile is the name of the lock file used on Unix systems; elsewhere
// the data directory is not locked.
const LockFile = "temporal.lock"

// ErrDataDirInUse is wrapped by the error Start returns when another server
// runs on the same data directory; it is only detected on Unix systems.
var ErrDataDirInUse = errors.New("data directory in use by another dev server")

func lockDataDir(dir string) (unlock func() error, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	return func() error { return nil }, nil
}
