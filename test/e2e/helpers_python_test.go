package e2e

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pythonCmd is python3 running examples/<name> with env, the ampflow
// package (clients/python) importable as if installed.
func pythonCmd(ctx context.Context, t *testing.T, name string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to run examples/" + name + " (.ci/run installs it)")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, append([]string{filepath.Join(root, "examples", name)}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{"PYTHONPATH=" + filepath.Join(root, "clients", "python")}, env...)...)
	return cmd
}

// runExample runs examples/<name> with python3 and env until it exits or
// ctx ends, and returns its output.
func runExample(ctx context.Context, t *testing.T, name string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := pythonCmd(ctx, t, name, env, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// pythonScript starts python3 on a script given as text, with the
// package importable and env; its output goes to out.
func pythonScript(ctx context.Context, t *testing.T, script string, out *syncBuffer, env ...string) *exec.Cmd {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to test clients/python (.ci/run installs it)")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, "-c", strings.TrimSpace(script))
	cmd.Env = append(os.Environ(), append([]string{"PYTHONPATH=" + filepath.Join(root, "clients", "python")}, env...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting python3: %v", err)
	}
	return cmd
}

// syncBuffer is an output buffer a process and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// slowAcks is a proxy to the API at addr that holds each POST /v1/acks
// for delay: agents behind proxies of different delays all see a
// dispatch before either ACKs it, so their race has one outcome.
func slowAcks(t *testing.T, addr string, delay time.Duration) string {
	t.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/acks" {
			time.Sleep(delay)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// exited reports whether cmd's process has ended, without waiting.
func exited(done <-chan error) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// waitFor starts a goroutine waiting on cmd; its channel gets the result.
func waitFor(cmd *exec.Cmd) <-chan error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done
}
