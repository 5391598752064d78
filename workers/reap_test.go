//go:build linux

package workers

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/config"
)

// TestReapRunners: a worker that starts kills the agent CLI a crashed one
// left running, as its pid file names it, and says so.
func TestReapRunners(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	dir := activities.PIDDir(cfg.DataDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, fmt.Sprintf("%d.json", cmd.Process.Pid))
	if err := os.WriteFile(pidFile, fmt.Appendf(nil, `{"pid":%d,"command":["sleep","300"]}`, cmd.Process.Pid), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	if got := ReapRunners(cfg, log); len(got) != 0 {
		t.Errorf("reaped %v with no runner configured", got)
	}
	cfg.Agents.Executor.Mode = config.AgentModeRunner
	got := ReapRunners(cfg, log)
	if len(got) != 1 || got[0].PID != cmd.Process.Pid || !got[0].Killed {
		t.Fatalf("reaped %v, want [%d]", got, cmd.Process.Pid)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the left-over process still runs")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there (%v)", err)
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("pid=%d", cmd.Process.Pid)) {
		t.Errorf("the log does not name the pid it killed:\n%s", logs.String())
	}
}
