package workers

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestHideEnvironment: once hidden, the process is not dumpable, which is
// what makes the kernel give its /proc files to root alone.
func TestHideEnvironment(t *testing.T) {
	before, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(before), 0, 0, 0) })
	if err := hideEnvironment(); err != nil {
		t.Fatal(err)
	}
	if got, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || got != 0 {
		t.Fatalf("dumpable = %d (%v) after hideEnvironment, want 0", got, err)
	}
}
