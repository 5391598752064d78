package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// run is one run of a CLI, from start to finish: its process group, the
// pipes of its output, and what its stream has said so far.
type run struct {
	s          Spec
	f          format
	cmd        *exec.Cmd
	pgid       int
	pidFile    string
	outR, errR *os.File
	// inW is the agent's standard input, for a runner that speaks on it
	// (ACP); nil for the others, whose input is empty.
	inW *os.File
	// in is the input of a CLI that takes its turns there (inputFormat).
	in         *input
	stderr     *tail
	stderrDone chan struct{}
	o          Outcome

	w           *watch
	sum         Usage
	resultUsage *Usage
	lastText    string
	errs        []string // error texts of the stream, for classify
}

// start checks s, then starts its CLI in a process group of its own with
// its output piped, and records the group in s.PIDDir.
func start(s Spec) (*run, error) {
	f, err := formatOf(s.Runner)
	if err != nil {
		return nil, err
	}
	argv, err := Command(s)
	if err != nil {
		return nil, err
	}
	if s.Prompt == "" {
		return nil, fmt.Errorf("running %s: empty prompt", s.Runner)
	}
	if st, err := os.Stat(s.Dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("running %s: directory %q: not a directory", s.Runner, s.Dir)
	}
	path, err := lookPath(argv[0], s.Env)
	if err != nil {
		return nil, fmt.Errorf("running %s: %w", s.Runner, err)
	}
	if s.ParkFile != "" {
		if err := os.Remove(s.ParkFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("running %s: removing the park file: %w", s.Runner, err)
		}
	}
	if s.Sandbox != nil {
		if argv, err = s.Sandbox.wrap(s.Dir, append([]string{path}, argv[1:]...)); err != nil {
			return nil, fmt.Errorf("running %s: %w", s.Runner, err)
		}
		if path, err = exec.LookPath(argv[0]); err != nil {
			return nil, fmt.Errorf("running %s in its sandbox: bubblewrap: %w", s.Runner, err)
		}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = s.Dir
	cmd.Env = append([]string{}, s.Env...) // never nil: nil would inherit ours
	newGroup(cmd)
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("running %s: %w", s.Runner, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("running %s: %w", s.Runner, err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	r := &run{s: s, f: f, cmd: cmd, outR: outR, errR: errR, o: Outcome{Started: time.Now()}}
	var inR *os.File
	_, acp := f.(acpFormat)
	inf, turns := f.(inputFormat)
	if acp || turns {
		if inR, r.inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			return nil, fmt.Errorf("running %s: %w", s.Runner, err)
		}
		cmd.Stdin = inR
	}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		if r.inW != nil {
			r.inW.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", strings.Join(argv[:1], " "), err)
	}
	r.pgid = cmd.Process.Pid
	r.o.PID = r.pgid
	if turns {
		r.in, r.inW = newInput(r.inW), nil
		r.in.send(inf.turn(s.Prompt))
	}
	if s.PIDDir != "" {
		pf, err := writePIDFile(s.PIDDir, r.pgid, argv, s.Owner)
		if err != nil {
			killGroup(r.pgid, killGrace)
			_ = cmd.Wait()
			outR.Close()
			errR.Close()
			r.release()
			return nil, err
		}
		r.pidFile = pf
	}
	r.stderr = &tail{n: StderrTail}
	r.stderrDone = make(chan struct{})
	go func() {
		_, _ = io.Copy(r.stderr, errR)
		close(r.stderrDone)
	}()
	return r, nil
}

// release forgets the run's pid file once its group is gone.
func (r *run) release() {
	if r.inW != nil {
		r.inW.Close()
	}
	if r.in != nil {
		r.in.close()
	}
	if r.pidFile != "" {
		os.Remove(r.pidFile)
	}
}

// loop reads the CLI's stream, calling on for each event, and kills the
// group when the watchdog fires, the run parks, its cost passes its cap,
// or ctx ends. It returns when the CLI has exited and its output is read.
func (r *run) loop(ctx context.Context, on func(Event)) {
	lines := make(chan []byte, 64)
	go readLines(r.outR, lines)
	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()

	r.w = newWatch(r.s)
	defer r.w.stop()
	dec := r.f.newDecoder()
	var drain <-chan time.Time
	var parkTick <-chan time.Time
	if r.s.ParkFile != "" {
		t := time.NewTicker(parkPoll)
		defer t.Stop()
		parkTick = t.C
	}
	_, defers := r.f.(deferrer)
	var messages <-chan Message
	if r.in != nil {
		messages = r.s.Messages
	}
	done := ctx.Done()
	for lines != nil || exited != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			r.line(dec, line, on)
		case err := <-exited:
			exited = nil
			r.exited(err)
			drain = time.After(drainGrace)
		case <-drain:
			r.outR.Close() // a process outside the group holds the pipe
			drain = nil
		case <-parkTick:
			if r.o.Parked != nil {
				continue
			}
			// The hook writes the file whole (WritePark), so a file
			// that does not read is not a park.
			if p, _ := readPark(r.s.ParkFile); p != nil {
				r.o.Parked = p
				if !defers || p.Hold {
					r.kill(ReasonParked)
				}
			}
		case reason := <-r.w.fired:
			r.kill(reason)
		case <-r.w.hardKill:
			signalGroup(r.pgid, syscall.SIGKILL)
		case reason := <-r.s.Stop:
			r.kill(reason)
		case m := <-messages:
			m.Taken <- r.o.Reason == "" && r.in.send(r.f.(inputFormat).turn(m.Text))
		case <-done:
			done = nil
			r.kill(ReasonCanceled)
		}
	}
}

// kill ends the group for reason, the first reason given being the one
// the Outcome keeps.
func (r *run) kill(reason Reason) {
	if r.o.Reason == "" {
		r.o.Reason = reason
	}
	signalGroup(r.pgid, syscall.SIGTERM)
	r.w.killing()
}

// line decodes one line of the stream into events, passes them to on, and
// stops a run whose reported cost is past its cap.
func (r *run) line(dec decoder, line []byte, on func(Event)) {
	r.w.event()
	if tap != nil {
		tap(line)
	}
	if r.in != nil && r.f.(inputFormat).taken(line) {
		r.in.taken++
	}
	for _, ev := range dec.decode(line) {
		r.take(ev, on)
	}
	if r.o.Reason == "" && r.overCap() {
		r.kill(ReasonMaxCost)
	}
}

// take notes one event in the Outcome and passes it to on.
func (r *run) take(ev Event, on func(Event)) {
	r.o.Events++
	switch ev.Kind {
	case EventSession:
		r.o.SessionID = ev.SessionID
	case EventText:
		r.lastText = ev.Text
	case EventError:
		r.errs = appendBounded(r.errs, ev.Text)
	case EventUsage:
		r.sum.add(ev.Usage)
	case EventResult:
		r.o.Result, r.o.ResultError = true, ev.IsError
		if ev.IsError {
			r.errs = appendBounded(r.errs, ev.Text)
		}
		r.o.Text = ev.Text
		if ev.SessionID != "" {
			r.o.SessionID = ev.SessionID
		}
		if ev.Usage != (Usage{}) {
			u := ev.Usage
			if r.in != nil && r.resultUsage != nil {
				// One result a turn, each the turn's own.
				u.add(*r.resultUsage)
			}
			r.resultUsage = &u
		}
		if r.in == nil || r.in.answer() {
			r.w.result()
		}
	}
	if len(r.s.Secrets) > 0 {
		ev = maskEvent(ev, r.s.Secrets)
	}
	on(ev)
}

// overCap says whether the run's reported cost is past its cap.
func (r *run) overCap() bool {
	if r.s.MaxCostUSD <= 0 {
		return false
	}
	u := total(r.sum, r.resultUsage, r.s.PriceUSD)
	return u.CostReported && u.CostUSD > r.s.MaxCostUSD
}

// exited takes the CLI's exit and kills whatever it left in its group.
func (r *run) exited(err error) {
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		r.o.ExitCode = -1
	} else {
		r.o.ExitCode = r.cmd.ProcessState.ExitCode()
	}
	signalGroup(r.pgid, syscall.SIGKILL)
	r.w.stop()
}

// finish waits (bounded) until the group is gone and its stderr read, and
// completes the Outcome: why the run ended, its park, text, usage, masked
// stderr and, for a run that failed, the class of its failure.
func (r *run) finish() Outcome {
	r.outR.Close()
	// SIGKILL is not instant: wait (bounded) until the group is gone.
	for deadline := time.Now().Add(killGrace); groupAlive(r.pgid) && time.Now().Before(deadline); {
		signalGroup(r.pgid, syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-r.stderrDone:
	case <-time.After(drainGrace):
	}
	r.errR.Close()

	o := r.o
	if o.Reason == "" {
		o.Reason = ReasonExited
	}
	if r.s.ParkFile != "" && o.Parked == nil {
		o.Parked, _ = readPark(r.s.ParkFile)
	}
	if o.Parked != nil {
		// The CLI is gone: a hook it ran outside its group, holding the
		// parked call, ends when the file does.
		_ = os.Remove(r.s.ParkFile)
	}
	if o.Text == "" {
		o.Text = r.lastText
	}
	o.Usage = total(r.sum, r.resultUsage, r.s.PriceUSD)
	o.Stderr = mask(r.stderr.String(), append(secretsOf(r.s.Env), r.s.Secrets...))
	o.Ended = time.Now()
	if !o.Succeeded() && o.Parked == nil {
		o.Failure = classify(o, r.errs)
	}
	return o
}
