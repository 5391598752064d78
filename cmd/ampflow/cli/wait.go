package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// errWaitTimedOut ends a wait that ran out of time.
var errWaitTimedOut = errors.New("timed out")

// passedCheck reports whether a task has left its initial plan and branch
// check: it changed status, wrote a timeline entry or raised a decision.
func passedCheck(st task.State) bool {
	return st.Status != task.StatusAwaitingApproval || st.Pending != nil || len(st.Timeline) > 0
}

// poll reads a task's state every interval until done says so, the
// timeout (zero: none) passes or ctx ends. seen is called on every state
// read. A worker that does not answer in time is polled again.
func poll(ctx context.Context, tasks workflows.Tasks, taskID string, interval, timeout time.Duration,
	seen func(task.State), done func(task.State) bool) (task.State, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last task.State
	for {
		st, err := tasks.State(ctx, taskID)
		switch {
		case err == nil:
			last = st
			if seen != nil {
				seen(st)
			}
			if done(st) {
				return st, nil
			}
		case task.ErrorCode(err) != task.CodeUnavailable || ctx.Err() != nil:
			if ctx.Err() != nil && timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return last, errWaitTimedOut
			}
			return last, err
		}
		select {
		case <-ctx.Done():
			if timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return last, errWaitTimedOut
			}
			return last, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// progress shows a task's status while a command waits for it: a spinner
// line redrawn in place on a terminal, else a plain line per change.
type progress struct {
	w        io.Writer
	terminal bool
	frame    int
	last     string
	drawn    bool
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// describe is the one-line status of a task shown while waiting.
func describe(st task.State) string {
	s := fmt.Sprintf("%s %s", st.TaskID, st.Status)
	if st.UnderlyingStatus != "" {
		s += " over " + string(st.UnderlyingStatus)
	}
	if sub := subtaskProgress(st); sub != "-" {
		s += " subtask " + sub
	}
	if st.RejectCount > 0 {
		s += fmt.Sprintf(" rejects %d", st.RejectCount)
	}
	if st.Pending != nil {
		s += fmt.Sprintf(" (waiting for an admin: %s %s)", st.Pending.Kind, st.Pending.ID)
	}
	if r := st.Recovering; r != nil && st.Pending == nil {
		s += fmt.Sprintf(" (recovering the %s's run on %s)", r.Role, r.MsgID)
	}
	return s
}

func (p *progress) show(st task.State) {
	line := describe(st)
	if !p.terminal {
		if line != p.last {
			fmt.Fprintln(p.w, line)
		}
		p.last = line
		return
	}
	p.frame = (p.frame + 1) % len(spinnerFrames)
	fmt.Fprintf(p.w, "\r\033[K%s %s", spinnerFrames[p.frame], line)
	p.last, p.drawn = line, true
}

// end clears the spinner line so that what follows starts clean.
func (p *progress) end() {
	if p.terminal && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// waitDone waits until a task is done or terminated, showing progress
// unless quiet. It returns exit 1 for a terminated task.
func (a *App) waitDone(ctx context.Context, tasks workflows.Tasks, taskID string, timeout time.Duration, quiet bool) (task.State, error) {
	p := &progress{w: a.Stdout, terminal: isTerminal(a.Stdout)}
	seen := p.show
	if quiet {
		seen = nil
	}
	st, err := poll(ctx, tasks, taskID, a.pollInterval, timeout, seen, func(st task.State) bool { return st.Status.Terminal() })
	p.end()
	switch {
	case errors.Is(err, errWaitTimedOut):
		return st, Exit(ExitFailed, fmt.Errorf("task %s is still %s after --wait-timeout %s", taskID, orDash(string(st.Status)), task.FormatDuration(timeout)))
	case err != nil:
		return st, refused(err)
	}
	return st, nil
}

// terminatedError is exit 1 with the reason a task ended without its work.
func terminatedError(st task.State) error {
	reason := st.Reason
	if reason == "" {
		reason = st.LastError
	}
	if reason == "" {
		reason = "no reason given"
	}
	return Exit(ExitFailed, task.Errorf(task.CodeFinished, "task %s terminated: %s", st.TaskID, strings.TrimSpace(reason)))
}
