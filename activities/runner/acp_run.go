package runner

import (
	"context"
	"io"
	"log/slog"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// acpCancelGrace bounds the wait for an agent's turn to end after
// session/cancel, and acpExitWait the wait for it to exit once its input
// is closed; then its group is stopped (a variable so tests can shorten
// it).
var acpCancelGrace = 5 * time.Second

const acpExitWait = 3 * time.Second

// loopACP runs an ACP agent: a driver goroutine takes it through the
// protocol (acpClient.drive) while this loop, the only one to touch the
// watchdog and the Outcome, takes its updates and steps. A watchdog, a
// park, the cost cap or ctx cancels the turn (session/cancel, open
// permission requests answered "cancelled"), waits acpCancelGrace for it
// to end, then closes the agent's input and stops its group. After its
// last turn the agent's input is closed and, if it does not exit within
// acpExitWait, its group is stopped; that ending counts as a clean exit.
func (r *run) loopACP(ctx context.Context, on func(Event)) {
	activity := make(chan struct{}, 1)
	msgs := make(chan acpMsg, 256)
	closed := make(chan struct{})
	defer close(closed)
	asks, stopAsks := context.WithCancel(context.Background())
	defer stopAsks()
	driverCtx, stopDriver := context.WithCancel(context.Background())
	defer stopDriver()

	c := &acpClient{spec: r.s, asks: asks, msgs: msgs, closed: closed}
	conn := acp.NewClientSideConnection(c, r.inW, &lineTee{r: r.outR, activity: activity})
	conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	go c.drive(driverCtx, conn)

	exited := make(chan error, 1)
	go func() { exited <- r.cmd.Wait() }()
	r.w = newWatch(r.s)
	defer r.w.stop()
	dec := newACPDecoder()
	var parkTick <-chan time.Time
	if r.s.ParkFile != "" {
		t := time.NewTicker(parkPoll)
		defer t.Stop()
		parkTick = t.C
	}

	var (
		session            string
		driverDone         bool
		canceling, closing bool
		ours               bool // ampflow ended the agent after its last turn
		grace, exitWait    <-chan time.Time
		drain              <-chan time.Time
	)
	// end closes the agent's input, which ends a well-behaved agent.
	end := func() {
		if closing {
			return
		}
		closing = true
		stopAsks()
		r.inW.Close()
		exitWait = time.After(acpExitWait)
	}
	cancel := func(reason Reason) {
		if r.o.Reason == "" {
			r.o.Reason = reason
		}
		if canceling || closing {
			return
		}
		canceling = true
		stopAsks()
		if session == "" || driverDone {
			end()
			return
		}
		go func() {
			_ = conn.Cancel(context.Background(), acp.CancelNotification{SessionId: acp.SessionId(session)})
		}()
		grace = time.After(acpCancelGrace)
	}
	done := ctx.Done()
	for exited != nil || !driverDone {
		select {
		case <-activity:
			r.w.event()
		case m := <-msgs:
			switch {
			case m.asked:
				r.w.event()
				if m.perm != nil {
					for _, ev := range dec.permission(*m.perm) {
						r.take(ev, on)
					}
				}
			case m.update != nil:
				for _, ev := range dec.update(*m.update, m.replay) {
					r.take(ev, on)
				}
			case m.step != nil:
				st := m.step
				switch {
				case st.session != "":
					session = st.session
					r.take(Event{Kind: EventSession, SessionID: session}, on)
				case st.resp != nil:
					for _, ev := range dec.turnEnd(*st.resp, st.last) {
						r.take(ev, on)
					}
				case st.err != nil:
					r.take(Event{Kind: EventError, Text: st.err.Error()}, on)
				case st.done:
					driverDone = true
					ours = r.o.Reason == "" && r.o.Result
					end()
				}
			}
			if r.o.Reason == "" && r.overCap() {
				cancel(ReasonMaxCost)
			}
		case err := <-exited:
			exited = nil
			r.exited(err)
			if ours && r.o.Reason == "" {
				r.o.ExitCode = 0
			}
			drain = time.After(drainGrace)
		case <-drain:
			drain = nil
			r.outR.Close() // a process outside the group holds the pipe
			stopDriver()
		case <-grace:
			grace = nil
			end()
		case <-exitWait:
			exitWait = nil
			signalGroup(r.pgid, syscall.SIGTERM)
			r.w.killing()
		case <-parkTick:
			if r.o.Parked != nil {
				continue
			}
			if p, _ := readPark(r.s.ParkFile); p != nil {
				r.o.Parked = p
				cancel(ReasonParked)
			}
		case reason := <-r.w.fired:
			if reason == ReasonExitAfterResult && closing {
				continue // ours to end, by exitWait
			}
			cancel(reason)
		case <-r.w.hardKill:
			signalGroup(r.pgid, syscall.SIGKILL)
		case reason := <-r.s.Stop:
			cancel(reason)
		case <-done:
			done = nil
			cancel(ReasonCanceled)
		}
	}
}
