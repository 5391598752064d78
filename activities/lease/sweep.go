package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/lease"
)

// Expiries is what the lease sweeper reads and writes (*ssot.DB).
type Expiries interface {
	DueLeases(ctx context.Context, cutoff time.Time, limit int) ([]ssot.MeshLease, error)
	CompareLeases(ctx context.Context, changes []ssot.LeaseChange) ([]bool, error)
	NextLeaseExpiry(ctx context.Context) (time.Time, error)
}

// Sweep holds the lease sweeper's activity.
type Sweep struct {
	Store Expiries
	// Now is the clock of released_at; nil is time.Now.
	Now func() time.Time
}

// LeaseSweep ends, in one transaction, up to in.Limit leases held
// directly in the store whose expiry is at or before in.Cutoff: each
// becomes expired, with a lock.auto_released event and an agent.chat
// telling its holder, as a lease workflow's timer does. A lease changed
// meanwhile (renewed, released, adopted by a lease workflow) is left as
// it is; a retried sweep writes nothing twice. Registered as
// lease.ActivitySweep.
//
// With in.Linger, while the next expiry is within lease.SweepGap, the
// sweep waits for it and sweeps again, up to in.Linger in all, so leases
// expiring close together end at their expiry rather than one workflow
// task apart.
func (s *Sweep) LeaseSweep(ctx context.Context, in lease.SweepRequest) (lease.SweepResult, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	until := now().Add(in.Linger)
	var total lease.SweepResult
	for {
		out, err := s.sweepOnce(ctx, in, now)
		if err != nil {
			return lease.SweepResult{}, err
		}
		total.Expired += out.Expired
		total.More, total.Next, total.At = out.More, out.Next, now().UTC()
		if out.More || in.Linger <= 0 || out.Next.IsZero() {
			return total, nil
		}
		wait := out.Next.Sub(total.At)
		if wait > lease.SweepGap || total.At.Add(wait).After(until) {
			return total, nil
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				total.At = now().UTC()
				return total, nil
			case <-t.C:
			}
		}
		in.Cutoff = out.Next
		if c := now(); c.After(in.Cutoff) {
			in.Cutoff = c
		}
	}
}

func (s *Sweep) sweepOnce(ctx context.Context, in lease.SweepRequest, now func() time.Time) (lease.SweepResult, error) {
	limit := in.Limit
	if limit < 1 || limit > lease.SweepBatch {
		limit = lease.SweepBatch
	}
	due, err := s.Store.DueLeases(ctx, in.Cutoff, limit)
	if err != nil {
		return lease.SweepResult{}, err
	}
	at := now().UTC().Truncate(time.Microsecond)
	changes := make([]ssot.LeaseChange, 0, len(due))
	for _, row := range due {
		l := leaseOf(row)
		l.State, l.Reason, l.Version = lease.StateExpired, lease.ReasonExpired, row.Version+1
		l.ReleasedAt = at
		if at.Before(l.ExpiresAt) {
			l.ReleasedAt = l.ExpiresAt // the caller's clock behind the taker's
		}
		next, events, err := changeRow(lease.Change{Lease: l, Event: lease.EventAutoReleased, Notify: true,
			EventID: fmt.Sprintf("%s-v%d", l.LeaseID, l.Version)})
		if err != nil {
			return lease.SweepResult{}, err
		}
		changes = append(changes, ssot.LeaseChange{Lease: next, From: row.Version, Events: events})
	}
	out := lease.SweepResult{More: len(due) == limit}
	if len(changes) > 0 {
		ok, err := s.Store.CompareLeases(ctx, changes)
		if err != nil {
			return lease.SweepResult{}, fmt.Errorf("ending %d expired leases: %w", len(changes), err)
		}
		for _, o := range ok {
			if o {
				out.Expired++
			}
		}
	}
	if out.Next, err = s.Store.NextLeaseExpiry(ctx); err != nil {
		return lease.SweepResult{}, err
	}
	return out, nil
}
