package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	f, err := formatOf(s.Runner)
	if err != nil {
		return Outcome{}, err
	}
	argv, err := Command(s)
	if err != nil {
		return Outcome{}, err
	}
	if s.Prompt == "" {
		return Outcome{}, fmt.Errorf("running %s: empty prompt", s.Runner)
	}
	if st, err := os.Stat(s.Dir); err != nil || !st.IsDir() {
		return Outcome{}, fmt.Errorf("running %s: directory %q: not a directory", s.Runner, s.Dir)
	}
	path, err := lookPath(argv[0], s.Env)
	if err != nil {
		return Outcome{}, fmt.Errorf("running %s: %w", s.Runner, err)
	}
	if on == nil {
		on = func(Event) {}
	}

	if s.ParkFile != "" {
		if err := os.Remove(s.ParkFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return Outcome{}, fmt.Errorf("running %s: removing the park file: %w", s.Runner, err)
		}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = s.Dir
	cmd.Env = append([]string{}, s.Env...) // never nil: nil would inherit ours
	newGroup(cmd)
	outR, outW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("running %s: %w", s.Runner, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Outcome{}, fmt.Errorf("running %s: %w", s.Runner, err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	o := Outcome{Started: time.Now()}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return Outcome{}, fmt.Errorf("starting %s: %w", strings.Join(argv[:1], " "), err)
	}
	pgid := cmd.Process.Pid
	o.PID = pgid
	if s.PIDDir != "" {
		pf, err := writePIDFile(s.PIDDir, pgid, argv)
		if err != nil {
			killGroup(pgid, killGrace)
			_ = cmd.Wait()
			outR.Close()
			errR.Close()
			return Outcome{}, err
		}
		defer os.Remove(pf)
	}

	stderr := &tail{n: StderrTail}
	stderrDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(stderr, errR)
		close(stderrDone)
	}()
	lines := make(chan []byte, 64)
	go readLines(outR, lines)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	w := newWatch(s)
	defer w.stop()
	dec := f.newDecoder()
	var sum Usage
	var resultUsage *Usage
	var lastText string
	var errs []string // error texts of the stream, for classify
	var drain <-chan time.Time
	var parkTick <-chan time.Time
	if s.ParkFile != "" {
		t := time.NewTicker(parkPoll)
		defer t.Stop()
		parkTick = t.C
	}
	_, defers := f.(deferrer)
	done := ctx.Done()
	kill := func(r Reason) {
		if o.Reason == "" {
			o.Reason = r
		}
		signalGroup(pgid, syscall.SIGTERM)
		w.killing()
	}
	for lines != nil || exited != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			w.event()
			if tap != nil {
				tap(line)
			}
			for _, ev := range dec.decode(line) {
				o.Events++
				switch ev.Kind {
				case EventSession:
					o.SessionID = ev.SessionID
				case EventText:
					lastText = ev.Text
				case EventError:
					errs = appendBounded(errs, ev.Text)
				case EventUsage:
					sum.add(ev.Usage)
				case EventResult:
					o.Result, o.ResultError = true, ev.IsError
					if ev.IsError {
						errs = appendBounded(errs, ev.Text)
					}
					o.Text = ev.Text
					if ev.SessionID != "" {
						o.SessionID = ev.SessionID
					}
					if ev.Usage != (Usage{}) {
						u := ev.Usage
						resultUsage = &u
					}
					w.result()
				}
				on(ev)
			}
			if s.MaxCostUSD > 0 && o.Reason == "" {
				u := total(sum, resultUsage, s.PriceUSD)
				if u.CostReported && u.CostUSD > s.MaxCostUSD {
					kill(ReasonMaxCost)
				}
			}
		case err := <-exited:
			exited = nil
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				o.ExitCode = -1
			} else {
				o.ExitCode = cmd.ProcessState.ExitCode()
			}
			// Whatever the CLI left in its group dies with it.
			signalGroup(pgid, syscall.SIGKILL)
			w.stop()
			drain = time.After(drainGrace)
		case <-drain:
			outR.Close() // a process outside the group holds the pipe
			drain = nil
		case <-parkTick:
			if o.Parked != nil {
				continue
			}
			// The hook writes the file whole (WritePark), so a file
			// that does not read is not a park.
			if p, _ := readPark(s.ParkFile); p != nil {
				o.Parked = p
				if !defers || p.Hold {
					kill(ReasonParked)
				}
			}
		case r := <-w.fired:
			kill(r)
		case <-w.hardKill:
			signalGroup(pgid, syscall.SIGKILL)
		case <-done:
			done = nil
			kill(ReasonCanceled)
		}
	}
	outR.Close()
	// SIGKILL is not instant: wait (bounded) until the group is gone.
	for deadline := time.Now().Add(killGrace); groupAlive(pgid) && time.Now().Before(deadline); {
		signalGroup(pgid, syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-stderrDone:
	case <-time.After(drainGrace):
	}
	errR.Close()

	if o.Reason == "" {
		o.Reason = ReasonExited
	}
	if s.ParkFile != "" && o.Parked == nil {
		o.Parked, _ = readPark(s.ParkFile)
	}
	if o.Parked != nil {
		// The CLI is gone: a hook it ran outside its group, holding the
		// parked call, ends when the file does.
		_ = os.Remove(s.ParkFile)
	}
	if o.Text == "" {
		o.Text = lastText
	}
	o.Usage = total(sum, resultUsage, s.PriceUSD)
	o.Stderr = mask(stderr.String(), secretsOf(s.Env))
	o.Ended = time.Now()
	if !o.Succeeded() && o.Parked == nil {
		o.Failure = classify(o, errs)
	}
	return o, nil
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
