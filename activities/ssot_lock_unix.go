//go:build unix

package activities

import (
	"os"
	"syscall"
)

// lockFile takes an advisory lock on f, held until f is closed: shared
// for a reader, exclusive for a writer.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	return syscall.Flock(int(f.Fd()), how)
}
