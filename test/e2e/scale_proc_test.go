package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// scaleDatabases are the databases of one scale-out run on the server that
// AMPFLOW_TEST_POSTGRES names, each with the run's suffix.
type scaleDatabases struct {
	admin    string // AMPFLOW_TEST_POSTGRES
	temporal string // URL of Temporal's main database; visibility is its _visibility twin
	ssot     string // URL of ampflow's SSOT database
}

// newScaleDatabases creates Temporal's two databases and the SSOT's, and
// drops them when t ends, failed or not. It fails t when the server does
// not answer: AMPFLOW_TEST_POSTGRES set means a server is expected.
func newScaleDatabases(t *testing.T, admin string) scaleDatabases {
	t.Helper()
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES is not a URL: %v", err)
	}
	suffix := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	names := []string{"temporal_scale_" + suffix, "temporal_scale_" + suffix + "_visibility", "ampflow_scale_" + suffix}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("AMPFLOW_TEST_POSTGRES=%s: PostgreSQL does not answer: %v", u.Redacted(), err)
	}
	defer conn.Close(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("dropping the test databases %v: %v", names, err)
			return
		}
		defer conn.Close(context.Background())
		for _, n := range names {
			// FORCE: a killed worker's connections may linger.
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); err != nil {
				t.Errorf("dropping database %s: %v", n, err)
			}
		}
	})
	for _, n := range names {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{n}.Sanitize()); err != nil {
			t.Fatalf("creating database %s: %v", n, err)
		}
	}
	at := func(db string) string {
		v := *u
		v.Path = "/" + db
		return v.String()
	}
	return scaleDatabases{admin: admin, temporal: at(names[0]), ssot: at(names[2])}
}

// clusterProc is one process of the scale-out cluster, `ampflow temporal`
// or `ampflow worker`, which the test may kill and start again.
type clusterProc struct {
	t     *testing.T
	name  string
	args  []string
	env   []string
	ready string // the stdout line prefix that says it serves
	api   string // host:port of its HTTP API, if any

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  strings.Builder
}

// within bounds every start of a cluster process.
const clusterStartWait = 60 * time.Second

func (p *clusterProc) start() {
	t := p.t
	t.Helper()
	began := time.Now()
	p.cmd = exec.Command(binary, p.args...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Dir = t.TempDir()
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &clusterWriter{p: p}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	ready := make(chan struct{})
	p.done = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.out.WriteString(line + "\n")
			p.mu.Unlock()
			if strings.HasPrefix(line, p.ready) {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(p.cmd, p.done)
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("%s exited before it was ready:\n%s", p.name, p.output())
	case <-time.After(clusterStartWait):
		t.Fatalf("%s not ready after %s:\n%s", p.name, clusterStartWait, p.output())
	}
	t.Logf("%s ready in %s", p.name, time.Since(began).Round(10*time.Millisecond))
}

func (p *clusterProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *clusterProc) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill stops the process with SIGKILL: no chance to clean up.
func (p *clusterProc) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// stop asks the process to stop with SIGTERM and waits for it.
func (p *clusterProc) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Errorf("%s did not stop on SIGTERM within 20s", p.name)
		p.kill()
	}
}

type clusterWriter struct{ p *clusterProc }

func (w *clusterWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}
