//go:build unix

package activities

import (
	"os/exec"
	"syscall"
)

// killGroup makes the command the leader of its own process group and has
// a cancel kill the whole group, so children (sh -c, test binaries) die
// with it and do not hold its output open.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
