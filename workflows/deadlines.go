package workflows

import (
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"
)

// deadlines holds the durable timers a task's waits share. Every timer is
// a TIMER_STARTED event and a timer task on the server, and a lifecycle's
// waits follow one another with deadlines minutes apart, so a wait whose
// deadline is at or after a pending timer's waits on that timer and, when
// it fires first, on one for the rest; only an earlier deadline starts a
// timer. None is cancelled: a cancel is a command and an event as well,
// and a timer left pending fires at most once into a workflow that is
// usually closed by then. Timers end with the run, so the zero value (a
// new run, after a continue-as-new too) holds none.
type deadlines struct {
	pending []pendingTimer
}

// pendingTimer is a started timer and the time it fires.
type pendingTimer struct {
	at time.Time
	f  workflow.Future
}

// await waits until cond holds or the deadline passes, and reports a
// timeout. cond is checked first, as workflow.AwaitWithTimeout does.
func (d *deadlines) await(ctx workflow.Context, deadline time.Time, cond func() bool) (timedOut bool, err error) {
	for {
		if cond() {
			return false, nil
		}
		now := workflow.Now(ctx)
		if !now.Before(deadline) {
			return true, nil
		}
		// A cancelled context cancels each timer it starts: every pass
		// would start one more.
		if err := ctx.Err(); err != nil {
			return false, err
		}
		f := d.timer(ctx, now, deadline)
		if err := workflow.Await(ctx, func() bool { return cond() || f.IsReady() }); err != nil {
			return false, err
		}
	}
}

// timer returns the pending timer that fires last at or before deadline,
// starting one for the deadline when none does.
func (d *deadlines) timer(ctx workflow.Context, now, deadline time.Time) workflow.Future {
	d.pending = slices.DeleteFunc(d.pending, func(p pendingTimer) bool { return p.f.IsReady() })
	var best workflow.Future
	var bestAt time.Time
	for _, p := range d.pending {
		if !p.at.After(deadline) && (best == nil || p.at.After(bestAt)) {
			best, bestAt = p.f, p.at
		}
	}
	if best != nil {
		return best
	}
	f := workflow.NewTimer(ctx, deadline.Sub(now))
	d.pending = append(d.pending, pendingTimer{at: deadline, f: f})
	return f
}
