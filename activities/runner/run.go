package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// killGrace is how long a group gets between SIGTERM and SIGKILL (a
// variable so tests can shorten it).
var killGrace = 5 * time.Second

const (
	// drainGrace bounds reading the CLI's output after it exited, in case
	// a process that left its group still holds the pipe.
	drainGrace = 5 * time.Second
	// maxLine bounds one line of a stream; a longer one is skipped.
	maxLine = 64 << 20
)

// tap, when set by a test, sees every line of every stream.
var tap func(line []byte)

// Run starts the CLI s describes in a process group of its own, calls on
// (when not nil) for every event of its stream, in order and from one
// goroutine, and returns when the CLI and its group are gone.
//
// A watchdog kills the whole group (SIGTERM, then SIGKILL) when the CLI
// sends no first event within FirstEventTimeout, is silent for IdleTimeout,
// does not exit within ExitGrace of its final result, runs past Timeout,
// costs more than MaxCostUSD, or ctx is canceled; Outcome.Reason says which.
// Processes the CLI left in its group when it exited are killed too.
//
// The error is for a run that could not start (an unknown runner, a missing
// binary or directory, an unwritable PIDDir); how a started run went is in
// the Outcome.
func Run(ctx context.Context, s Spec, on func(Event)) (Outcome, error) {
	if on == nil {
		on = func(Event) {}
	}
	r, err := start(s)
	if err != nil {
		return Outcome{}, err
	}
	defer r.release()
	if _, ok := r.f.(acpFormat); ok {
		r.loopACP(ctx, on)
	} else {
		r.loop(ctx, on)
	}
	return r.finish(), nil
}

func appendBounded(list []string, s string) []string {
	const n = 32
	if len(list) == n {
		list = append(list[:0], list[1:]...)
	}
	return append(list, s)
}

// total is a run's usage: the result's figure when the CLI reports one,
// else the sum of its steps, priced by price when the CLI gave no cost.
func total(sum Usage, result *Usage, price func(Usage) float64) Usage {
	u := sum
	if result != nil {
		u = *result
		u.SessionTotal = u.SessionTotal || sum.SessionTotal
		if !u.CostReported && sum.CostReported {
			u.CostUSD, u.CostReported = sum.CostUSD, true
		}
	}
	if !u.CostReported && price != nil {
		u.CostUSD, u.CostReported = price(u), true
	}
	return u
}

func readLines(r io.Reader, out chan<- []byte) {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) <= maxLine {
				long = append(long, chunk...)
			} else {
				long = long[:0:0]
			}
			continue
		}
		line := append(long, chunk...)
		long = nil
		if len(line) > 0 {
			if t := trimSpace(line); len(t) > 0 {
				out <- append([]byte(nil), t...)
			}
		}
		if err != nil {
			return
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// lookPath finds file on the PATH of env, the child's environment, rather
// than on ours.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		if err := executable(file); err != nil {
			return "", fmt.Errorf("command %s: %w", file, err)
		}
		return file, nil
	}
	var pathEnv string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, file)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found on the PATH of the run's environment (%q)", file, pathEnv)
}

func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
