package lease

import (
	"github.com/ampflow/ampflow/amp/lease"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The lease sweeper ends the leases held directly in the store (taken
// without a lease workflow: an agent's free key, a task's free branch) at
// their expiry: one workflow per namespace, with one durable timer to the
// earliest expiry, where a lease workflow per key would hold one each.

// SweeperWorkflowType is the registered name of Sweeper.
const SweeperWorkflowType = "ampflow.lease.sweeper"

// SweeperWorkflowID is the id of the one sweeper of a namespace.
func SweeperWorkflowID() string { return "lease-sweeper" }

// SignalExpiry tells the sweeper a lease expires at ExpirySignal.At; a
// zero At asks it to sweep now (a worker starting).
const SignalExpiry = "lease.expiry"

// ExpirySignal is SignalExpiry's payload.
type ExpirySignal struct {
	At time.Time `json:"at,omitzero"`
}

// Sweeper bounds; the sweep's own are in amp/lease.
const (
	// IdleSweep bounds a sweeper's sleep, so a lease whose signal was lost
	// (its taker killed between the store's commit and the signal) is
	// still ended within IdleSweep of its expiry.
	IdleSweep = time.Minute
	// sweepRounds bounds a run before it continues as new.
	sweepRounds = 1000
	// maxPromised bounds the expiries a sweeper remembers (the earliest).
	maxPromised = 1000
)

// SweeperInput starts a sweeper; Promised, carried over a continue-as-new,
// are the expiries signalled and not yet reached.
type SweeperInput struct {
	Promised []time.Time `json:"promised,omitempty"`
}

type sweeper struct {
	// promised holds, sorted, the expiries signalled and not yet reached.
	// A process sends a signal only for an expiry earlier than its last
	// one still ahead (Expiries.Due), so the sweeper wakes at each: a
	// sweep at that time reads from the store every lease taken before.
	promised []time.Time
}

// Sweeper ends the direct leases as they expire: it sweeps, sets one
// timer to the earliest of the next expiry, the promised expiries and
// IdleSweep, and sweeps again when the timer fires or a signal brings an
// earlier expiry.
func Sweeper(ctx workflow.Context, in SweeperInput) error {
	s := &sweeper{}
	for _, at := range in.Promised {
		s.promise(at)
	}
	ch := workflow.GetSignalChannel(ctx, SignalExpiry)
	for round := 0; ; round++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.drain(ctx, ch)
		now := workflow.Now(ctx)
		next, at, err := s.sweep(ctx, now)
		if err != nil {
			workflow.GetLogger(ctx).Error("sweeping expired leases", "error", err)
			next = now.Add(time.Second)
		}
		if at.After(now) {
			now = at
		}
		s.promised = slices.DeleteFunc(s.promised, func(p time.Time) bool { return !p.After(now) })
		if round+1 >= sweepRounds || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			s.drain(ctx, ch)
			return workflow.NewContinueAsNewError(ctx, SweeperWorkflowType, SweeperInput{Promised: s.promised})
		}
		wake := now.Add(IdleSweep)
		if !next.IsZero() && next.Before(wake) {
			wake = next
		}
		if len(s.promised) > 0 && s.promised[0].Before(wake) {
			wake = s.promised[0]
		}
		s.wait(ctx, ch, wake, now)
	}
}

// sweep ends every direct lease due by cutoff and answers the next expiry
// and the sweep's clock at its end.
func (s *sweeper) sweep(ctx workflow.Context, cutoff time.Time) (time.Time, time.Time, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 5 * time.Second},
	})
	for {
		var out lease.SweepResult
		if err := workflow.ExecuteLocalActivity(lctx, lease.ActivitySweep, lease.SweepRequest{Cutoff: cutoff, Limit: lease.SweepBatch, Linger: lease.SweepLinger}).Get(ctx, &out); err != nil {
			return time.Time{}, time.Time{}, err
		}
		if !out.More {
			return out.Next, out.At, nil
		}
	}
}

// wait sleeps until wake, counted from now, or until a signal asks for an
// earlier sweep: at once for a zero or past expiry, else at that expiry.
// The timer is cancelled when replaced, so the server holds one.
func (s *sweeper) wait(ctx workflow.Context, ch workflow.ReceiveChannel, wake, now time.Time) {
	for first := true; ; first = false {
		if !first {
			now = workflow.Now(ctx)
		}
		d := wake.Sub(now)
		if d <= 0 {
			return
		}
		tctx, cancel := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(tctx, d)
		for moved := false; !moved; {
			var (
				sig   ExpirySignal
				fired bool
			)
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(timer, func(workflow.Future) { fired = true })
			sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &sig) })
			sel.Select(ctx)
			if fired {
				cancel()
				return
			}
			s.promise(sig.At)
			if sig.At.IsZero() || sig.At.Before(wake) {
				cancel()
				if !sig.At.After(workflow.Now(ctx)) {
					return
				}
				wake, moved = sig.At, true
			}
		}
	}
}

// drain takes the signals already received into the promised expiries.
func (s *sweeper) drain(ctx workflow.Context, ch workflow.ReceiveChannel) {
	for {
		var sig ExpirySignal
		if !ch.ReceiveAsync(&sig) {
			return
		}
		s.promise(sig.At)
	}
}

func (s *sweeper) promise(at time.Time) {
	if at.IsZero() {
		return
	}
	i, found := slices.BinarySearchFunc(s.promised, at, time.Time.Compare)
	if found {
		return
	}
	s.promised = slices.Insert(s.promised, i, at)
	if len(s.promised) > maxPromised {
		s.promised = s.promised[:maxPromised]
	}
}
