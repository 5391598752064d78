package ssot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PrivateDatabase makes the SQLite database at path, created empty when
// missing, and the journal files beside it readable and writable by their
// owner only (0600): they hold every record, token digest and chat state.
// SQLite gives the journals it makes the database's mode.
func PrivateDatabase(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("making the directory of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	f.Close()
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Chmod(path+suffix, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("making %s private: %w", path+suffix, err)
		}
	}
	return nil
}
