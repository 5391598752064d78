package runner

import "time"

// watch holds a run's watchdog timers. Its methods are called from Run's
// loop only; a timer that fires sends its reason on fired.
type watch struct {
	first, idle, grace, wall *time.Timer
	idleAfter, exitGrace     time.Duration
	fired                    chan Reason
	hardKill                 <-chan time.Time
	sawEvent                 bool
}

func newWatch(s Spec) *watch {
	w := &watch{fired: make(chan Reason, 4), exitGrace: s.ExitGrace, idleAfter: s.IdleTimeout}
	if w.exitGrace <= 0 {
		w.exitGrace = DefaultExitGrace
	}
	if w.idleAfter == 0 {
		w.idleAfter = DefaultIdleTimeout
	}
	first := s.FirstEventTimeout
	if first <= 0 {
		first = DefaultFirstEventTimeout
	}
	w.first = w.after(first, ReasonFirstEvent)
	if s.Timeout > 0 {
		w.wall = w.after(s.Timeout, ReasonTimeout)
	}
	return w
}

func (w *watch) after(d time.Duration, r Reason) *time.Timer {
	return time.AfterFunc(d, func() {
		select {
		case w.fired <- r:
		default:
		}
	})
}

// event notes activity on the stream.
func (w *watch) event() {
	if !w.sawEvent {
		w.sawEvent = true
		w.first.Stop()
	}
	if w.idleAfter < 0 {
		return
	}
	if w.idle == nil {
		w.idle = w.after(w.idleAfter, ReasonIdle)
		return
	}
	w.idle.Reset(w.idleAfter)
}

// result starts the wait for the CLI to exit after its final result.
func (w *watch) result() {
	if w.grace == nil {
		w.grace = w.after(w.exitGrace, ReasonExitAfterResult)
	}
}

// killing notes that the group got SIGTERM; SIGKILL follows after killGrace.
func (w *watch) killing() {
	if w.hardKill == nil {
		w.hardKill = time.After(killGrace)
	}
}

// stop stops every timer; the run has ended.
func (w *watch) stop() {
	for _, t := range []*time.Timer{w.first, w.idle, w.grace, w.wall} {
		if t != nil {
			t.Stop()
		}
	}
}
