package workers

import "golang.org/x/sys/unix"

// hideEnvironment marks the process not dumpable: its /proc/<pid>/environ
// and memory are then readable by root alone, not by the agents and CI
// commands it runs under the same user, which would otherwise find the
// worker's secrets there. It cannot help when that user is root.
func hideEnvironment() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
