package devserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// childDirEnv makes TestChildServer serve the directory it names; the test
// binary runs itself with it set to get a server in a process it can kill.
const childDirEnv = "AMPFLOW_DEVSERVER_CHILD_DIR"

const childAddrPrefix = "devserver-frontend "

// childKey is the API key of the child's server.
const childKey = "child-key"

// TestChildServer is the child half of TestSurvivesKill: it prints the
// frontend address and serves until its stdin closes or it is killed.
func TestChildServer(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestSurvivesKill")
	}
	s := mustStartServer(t, Options{DataDir: dir, APIKey: childKey})
	fmt.Printf("%s%s\n", childAddrPrefix, s.FrontendAddr())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// TestSurvivesKill starts a workflow on a server in a child process, kills
// that process with SIGKILL, and completes the workflow on a new server on
// the same directory.
func TestSurvivesKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), childAddrPrefix); ok {
				addrs <- addr
			}
		}
		close(addrs)
	}()
	var addr string
	select {
	case a, ok := <-addrs:
		if !ok {
			t.Fatal("child process exited before printing its frontend address")
		}
		addr = a
	case <-ctx.Done():
		t.Fatal("child process did not print its frontend address in time")
	}

	c := dialKey(t, addr, DefaultNamespace, childKey)
	const workflowID = "greet-survivor"
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflowID, TaskQueue: "devserver-kill"}, greet, greetInput{Name: "survivor"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	_ = cmd.Wait()

	s := mustStartServer(t, Options{DataDir: dir})
	c = dial(t, s, DefaultNamespace)
	w := worker.New(c, "devserver-kill", worker.Options{})
	w.RegisterWorkflow(greet)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var res greetResult
	if err := c.GetWorkflow(ctx, workflowID, "").Get(ctx, &res); err != nil {
		t.Fatalf("workflow %s after kill: %v", workflowID, err)
	}
	if res.Greeting != "hello survivor" {
		t.Fatalf("greeting %q, want %q", res.Greeting, "hello survivor")
	}
}

// assertReleased fails t if the frontend port or the data directory is
// still held after a failed Start.
func assertReleased(t *testing.T, dir string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		t.Errorf("frontend port %d still taken after Start failed: %v", port, err)
	} else {
		ln.Close()
	}
	unlock, err := lockDataDir(dir)
	if err != nil {
		t.Errorf("data directory still locked after Start failed: %v", err)
	} else {
		_ = unlock()
	}
}

// TestStartFailsOnBusyPort checks that a port the server cannot bind is an
// error from Start, not the end of the process.
func TestStartFailsOnBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	s, err := Start(ctx, Options{DataDir: dir, Port: port, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		_ = s.Stop()
		t.Fatalf("Start succeeded on busy port %d", port)
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("error %q does not say the address is in use", err)
	}
	ln.Close()
	assertReleased(t, dir, port)
}

// TestStartGivesUpWithContext checks that Start honours its context and
// releases what it took when it fails.
func TestStartGivesUpWithContext(t *testing.T) {
	port := freeTestPort(t)
	dir := t.TempDir()
	// A start takes several times this, so the deadline passes part way,
	// after the frontend port may have been bound.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s, err := Start(ctx, Options{DataDir: dir, Port: port, Logger: testLogger()})
	if err == nil {
		_ = s.Stop()
		t.Fatal("Start succeeded past its deadline")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v does not wrap context.DeadlineExceeded", err)
	}
	assertReleased(t, dir, port)
}
