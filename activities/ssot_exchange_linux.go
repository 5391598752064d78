//go:build linux

package activities

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchangeFiles swaps the names of two files in one step.
func exchangeFiles(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if err == unix.EINVAL || err == unix.EPERM || err == unix.ENOSYS {
		// A file system without RENAME_EXCHANGE, a kernel without
		// renameat2, or a sandbox that forbids it; a real permission
		// problem shows in the fallback's own error.
		err = errors.ErrUnsupported
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}
