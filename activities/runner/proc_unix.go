//go:build unix

package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// newGroup makes cmd the leader of a process group of its own, so the CLI
// and everything it starts can be signalled together.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals every process in the group led by pgid; a group that
// is gone already is not an error.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// groupAlive reports whether any live process is left in the group.
// Zombies do not count: they hold no resources and, where the init process
// does not reap orphans (as in some containers), never go away.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		state, pg, ok := procStat(pid)
		if ok && pg == pgid && state != "Z" && state != "X" {
			return true
		}
	}
	return false
}

// procStat reads a process's state and process group from /proc.
func procStat(pid int) (state string, pgrp int, ok bool) {
	f := statFields(pid)
	if len(f) < 3 {
		return "", 0, false
	}
	pgrp, err := strconv.Atoi(f[2])
	return f[0], pgrp, err == nil
}

// statFields are the fields of /proc/PID/stat after the command name, so
// f[0] is the state (field 3), or nil where there is no /proc.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	// The command name in field 2 may hold spaces; fields restart after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// pidFile is what Run writes to Spec.PIDDir while a CLI runs.
type pidFile struct {
	PID     int       `json:"pid"` // also the process group id
	Start   uint64    `json:"start"`
	Command []string  `json:"command"`
	Owner   *RunOwner `json:"owner,omitempty"`
}

func writePIDFile(dir string, pid int, argv []string, owner ...*RunOwner) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating pid dir %s: %w", dir, err)
	}
	pf := pidFile{PID: pid, Start: startTime(pid), Command: argv}
	if len(owner) > 0 {
		pf.Owner = owner[0]
	}
	b, _ := json.Marshal(pf)
	path := filepath.Join(dir, strconv.Itoa(pid)+".json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", fmt.Errorf("writing pid file %s: %w", path, err)
	}
	return path, nil
}

// Reap kills the process groups that runs of a crashed caller left behind:
// for each pid file in pidDir whose process still exists and still runs the
// recorded command (its start time and command line match), it sends the
// group SIGTERM, then SIGKILL after a few seconds. It removes the pid files
// it has dealt with and returns the pids of the groups it killed. A missing
// pidDir is not an error.
func Reap(pidDir string) ([]int, error) {
	runs, err := ReapRuns(pidDir)
	var killed []int
	for _, r := range runs {
		if r.Killed {
			killed = append(killed, r.PID)
		}
	}
	return killed, err
}

// ReapRuns is Reap that returns every run a pid file named: those it
// killed and those already gone, with whom they worked for, and the runs
// whose CLI had not started (NoteAttempt's records, with PID 0). A run
// may be named twice, by its attempt record and by its CLI's pid file.
func ReapRuns(pidDir string) ([]Reaped, error) {
	entries, err := os.ReadDir(pidDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pid dir %s: %w", pidDir, err)
	}
	var killed []Reaped
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(pidDir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading pid file %s: %w", path, err))
			continue
		}
		var pf pidFile
		err = json.Unmarshal(b, &pf)
		attempt := err == nil && pf.PID == 0 && pf.Owner != nil
		if err != nil || pf.PID <= 1 && !attempt {
			_ = os.Remove(path)
			continue
		}
		r := Reaped{PID: pf.PID, Owner: pf.Owner}
		if st, err := os.Stat(path); err == nil {
			r.Since = st.ModTime()
		}
		if !attempt && ours(pf) {
			killGroup(pf.PID, 3*time.Second)
			r.Killed = true
		}
		killed = append(killed, r)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing pid file %s: %w", path, err))
		}
	}
	return killed, errors.Join(errs...)
}

// ours reports whether the group of a pid file is still the run's.
func ours(pf pidFile) bool {
	if !groupAlive(pf.PID) {
		return false
	}
	if state, _, ok := procStat(pf.PID); syscall.Kill(pf.PID, 0) != nil || ok && state == "Z" {
		// The leader is gone but members of its group live on; a pid that
		// is still some group's id is never handed out again, so they are
		// the run's.
		return true
	}
	if pf.Start != 0 && startTime(pf.PID) != 0 && startTime(pf.PID) != pf.Start {
		return false
	}
	if len(pf.Command) == 0 {
		return false
	}
	cmdline, err := commandLine(pf.PID)
	if err != nil {
		return false
	}
	return strings.Contains(cmdline, filepath.Base(pf.Command[0]))
}

// killGroup sends the group SIGTERM and, if any of it is left after grace,
// SIGKILL.
func killGroup(pgid int, grace time.Duration) {
	signalGroup(pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	signalGroup(pgid, syscall.SIGKILL)
}

// startTime is the process's start time in clock ticks since boot (field 22
// of /proc/PID/stat), or 0 where there is no /proc.
func startTime(pid int) uint64 {
	f := statFields(pid)
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

func commandLine(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil {
		return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})), nil
	}
	out, err := exec.Command("ps", "-o", "args=", "-p", strconv.Itoa(pid)).Output()
	return string(out), err
}
