package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the ampflow executable built once for the package.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ampflow-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "ampflow")
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// ampflow-hook beside ampflow, where the worker looks for the hook
	// Codex and Gemini CLI runners run.
	for _, cmd := range []string{"ampflow", "ampflow-hook"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "./cmd/"+cmd)
		build.Dir = root
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building "+cmd+":", err)
			return 1
		}
	}
	return m.Run()
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module: %w", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// freePort picks a loopback port that is free now.
//
// The port is below Linux's ephemeral range (32768–60999 by default), so
// that no outgoing connection of this or another process takes it between
// a kill and a restart, when nothing listens on it.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatal("no free port in 20000-31999 after 100 tries")
	return 0
}

// devProc is one `ampflow dev` process.
type devProc struct {
	t        *testing.T
	dataDir  string
	env      []string
	temporal string
	api      string
	cmd      *exec.Cmd
	done     chan struct{}
	mu       sync.Mutex
	out      strings.Builder
}

// startDev runs `ampflow dev` on dataDir and waits until it is ready.
func startDev(t *testing.T, dataDir string, env ...string) *devProc {
	t.Helper()
	p := &devProc{t: t, dataDir: dataDir, env: env,
		temporal: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		api:      fmt.Sprintf("127.0.0.1:%d", freePort(t)),
	}
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *devProc) start() {
	t := p.t
	t.Helper()
	_, port, _ := net.SplitHostPort(p.temporal)
	args := []string{"dev", "--data-dir", p.dataDir, "--temporal-port", port, "--http-addr", p.api}
	// The Web UI is off unless the test asks for it by its variable.
	if !slices.ContainsFunc(p.env, func(e string) bool { return strings.HasPrefix(e, "AMPFLOW_DEV_UI_PORT=") }) {
		args = append(args, "--ui-port", "0")
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Dir = p.dataDir
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &lockedWriter{p: p}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting ampflow dev: %v", err)
	}
	ready := make(chan struct{})
	p.done = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.out.WriteString(line + "\n")
			p.mu.Unlock()
			if strings.HasPrefix(line, "ready in") {
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("ampflow dev exited before it was ready:\n%s", p.output())
	case <-time.After(60 * time.Second):
		t.Fatalf("ampflow dev not ready after 60s:\n%s", p.output())
	}
}

func (p *devProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// kill stops the process with SIGKILL: no chance to clean up.
func (p *devProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// restart starts the process again on the same data dir and ports.
func (p *devProc) restart() { p.start() }

func (p *devProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Errorf("ampflow dev did not stop on SIGTERM within 20s")
		p.kill()
	}
}

type lockedWriter struct{ p *devProc }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

var _ = context.Background
