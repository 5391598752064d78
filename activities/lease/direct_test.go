package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/lease/leasetest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/activities/ssot/ssottest"
	"github.com/ampflow/ampflow/amp/lease"
)

var _ Workflows = (*leasetest.Client)(nil)

type dues struct {
	mu sync.Mutex
	at []time.Time
}

func (d *dues) Due(at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = append(d.at, at)
}

func openStores(t *testing.T, u string, n int) []*ssot.DB {
	var out []*ssot.DB
	for range n {
		db, err := ssot.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		out = append(out, db)
	}
	return out
}

func refusal(err error) string {
	var ref *lease.RefusedError
	if errors.As(err, &ref) {
		return ref.Type
	}
	return ""
}

// TestDirectLeases runs agents' leases held in the store through two
// workers on one database: a free key is taken by exactly one of many
// racing agents, a held key answers its holder, the holder's acquire
// again renews the same lease, renewals and releases are the holder's,
// the sweeper ends a lease at its expiry and frees the key, and a key its
// lease workflow holds goes to the workflow.
func TestDirectLeases(t *testing.T) {
	for _, e := range ssottest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			ctx := context.Background()
			stores := openStores(t, e.URL(t), 2)
			wf := leasetest.New()
			d := &dues{}
			workers := []*Direct{{Workflows: wf, Store: stores[0], Expiry: d}, {Workflows: wf, Store: stores[1], Expiry: d}}

			var (
				mu  sync.Mutex
				won []lease.Lease
				wg  sync.WaitGroup
			)
			gate := make(chan struct{})
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-gate
					res, err := workers[i%2].Acquire(ctx, "file:app/README.md", lease.AcquireRequest{AgentID: fmt.Sprintf("agent-%d", i), TTLSeconds: 60})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil:
						t.Error(err)
					case res.Lease != nil:
						won = append(won, *res.Lease)
					case res.Conflict == nil || res.Conflict.RetryAfterMS <= 0 || res.Conflict.RetryAfterMS > 60000:
						t.Errorf("agent-%d: neither lease nor conflict: %+v", i, res)
					}
				}()
			}
			close(gate)
			wg.Wait()
			if len(won) != 1 {
				t.Fatalf("the free key went to %d agents, want exactly one: %+v", len(won), won)
			}
			l := won[0]
			if len(d.at) != 1 || !d.at[0].Equal(l.ExpiresAt) {
				t.Fatalf("sweeper woken for %v, want once for %s", d.at, l.ExpiresAt)
			}
			// The holder asking again, on the other worker (a retry): the
			// same lease, renewed.
			again, err := workers[1].Acquire(ctx, l.ResourceKey, lease.AcquireRequest{AgentID: l.AgentID, TTLSeconds: 120})
			if err != nil || again.Lease == nil || again.Lease.LeaseID != l.LeaseID || !again.Lease.LastHeartbeat.After(l.AcquiredAt) || again.Lease.TTLSeconds != 120 {
				t.Fatalf("the holder's acquire again: %+v %v, want %s renewed", again, err, l.LeaseID)
			}
			if _, err := workers[0].Renew(ctx, lease.RenewRequest{LeaseID: l.LeaseID, AgentID: "mallory", TTLSeconds: 60}); refusal(err) != lease.ErrNotHolder {
				t.Fatalf("another's renewal: %v, want %s", err, lease.ErrNotHolder)
			}
			if _, err := workers[0].Release(ctx, lease.ReleaseRequest{LeaseID: l.LeaseID, AgentID: "mallory"}); refusal(err) != lease.ErrNotHolder {
				t.Fatalf("another's release: %v, want %s", err, lease.ErrNotHolder)
			}
			renewed, err := workers[0].Renew(ctx, lease.RenewRequest{LeaseID: l.LeaseID, AgentID: l.AgentID, TTLSeconds: 1})
			if err != nil || renewed.Version != 3 || !renewed.ExpiresAt.Equal(renewed.LastHeartbeat.Add(time.Second)) {
				t.Fatalf("renewal: %+v %v", renewed, err)
			}

			// The sweeper, on the other worker, ends it at its expiry.
			sw := &Sweep{Store: stores[1], Now: func() time.Time { return renewed.ExpiresAt.Add(5 * time.Millisecond) }}
			res, err := sw.LeaseSweep(ctx, lease.SweepRequest{Cutoff: renewed.ExpiresAt.Add(-time.Millisecond)})
			if err != nil || res.Expired != 0 || !res.Next.Equal(renewed.ExpiresAt) {
				t.Fatalf("sweep before the expiry: %+v %v, want nothing ended, next %s", res, err, renewed.ExpiresAt)
			}
			res, err = sw.LeaseSweep(ctx, lease.SweepRequest{Cutoff: renewed.ExpiresAt})
			if err != nil || res.Expired != 1 || res.More || !res.Next.IsZero() {
				t.Fatalf("sweep at the expiry: %+v %v, want one ended", res, err)
			}
			got, err := stores[0].Lease(ctx, l.LeaseID)
			if err != nil || got.State != lease.StateExpired || got.Reason != lease.ReasonExpired ||
				!got.ReleasedAt.Equal(renewed.ExpiresAt.Add(5*time.Millisecond)) || !got.LastHeartbeat.Equal(renewed.LastHeartbeat) {
				t.Fatalf("swept lease %+v %v", got, err)
			}
			events, _, err := stores[0].MeshInbox(ctx, ssot.InboxQuery{Recipients: []string{l.AgentID}}, ssot.Page{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			types := map[string]int{}
			for _, ev := range events {
				types[ev.Type]++
			}
			if types[lease.EventAcquired] != 1 || types[lease.EventRenewed] != 2 || types[lease.EventAutoReleased] != 1 || types["agent.chat"] != 1 {
				t.Fatalf("the holder's events %v", types)
			}
			if _, err := workers[0].Renew(ctx, lease.RenewRequest{LeaseID: l.LeaseID, AgentID: l.AgentID, TTLSeconds: 60}); refusal(err) != lease.ErrNotHeld {
				t.Fatalf("renewal after the expiry: %v, want %s", err, lease.ErrNotHeld)
			}
			// The key is free again; its new holder releases it.
			next, err := workers[1].Acquire(ctx, l.ResourceKey, lease.AcquireRequest{AgentID: "bob", TTLSeconds: 60})
			if err != nil || next.Lease == nil || next.Lease.AgentID != "bob" {
				t.Fatalf("acquire after the expiry: %+v %v", next, err)
			}
			rel, err := workers[0].Release(ctx, lease.ReleaseRequest{LeaseID: next.Lease.LeaseID, AgentID: "bob"})
			if err != nil || rel.State != lease.StateReleased || rel.Reason != lease.ReasonReleased {
				t.Fatalf("release: %+v %v", rel, err)
			}
			if _, err := workers[1].Release(ctx, lease.ReleaseRequest{LeaseID: next.Lease.LeaseID, AgentID: "bob"}); refusal(err) != lease.ErrNotHeld {
				t.Fatalf("release again: %v, want %s", err, lease.ErrNotHeld)
			}
			// An admin ends another's lease.
			carol, err := workers[0].Acquire(ctx, "k:admin", lease.AcquireRequest{AgentID: "carol", TTLSeconds: 60})
			if err != nil || carol.Lease == nil {
				t.Fatalf("carol's acquire: %+v %v", carol, err)
			}
			if rel, err := workers[1].Release(ctx, lease.ReleaseRequest{LeaseID: carol.Lease.LeaseID, AgentID: "root", Admin: true}); err != nil || rel.Reason != lease.ReasonAdmin {
				t.Fatalf("admin's release: %+v %v", rel, err)
			}

			// A key its lease workflow holds is the workflow's.
			at := time.Now().UTC().Truncate(time.Microsecond)
			held := ssot.MeshLease{LeaseID: "Lwf.x", ResourceKey: "k:queued", AgentID: "dave", State: lease.StateActive, TTLSeconds: 60,
				AcquiredAt: at, LastHeartbeat: at, ExpiresAt: at.Add(time.Minute), Version: 1}
			if _, ok, err := stores[0].TakeLease(ctx, held, nil, true); err != nil || !ok {
				t.Fatalf("the workflow's take: %v %v", ok, err)
			}
			wf.Hold(lease.Lease{LeaseID: held.LeaseID, ResourceKey: held.ResourceKey, AgentID: held.AgentID, TTLSeconds: 60})
			// The workflow's conflict, told by its retry, which the store's
			// (at most the lease's TTL) is not.
			wf.RetryAfterMS = 120000
			if res, err := workers[1].Acquire(ctx, "k:queued", lease.AcquireRequest{AgentID: "erin", TTLSeconds: 60}); err != nil || res.Conflict == nil ||
				res.Conflict.Holder != "dave" || res.Conflict.RetryAfterMS != wf.RetryAfterMS {
				t.Fatalf("acquire of a workflow's key: %+v %v", res, err)
			}
			workers[0].Renew(ctx, lease.RenewRequest{LeaseID: "Lwf.x", AgentID: "dave", TTLSeconds: 60})
			workers[0].Release(ctx, lease.ReleaseRequest{LeaseID: "Lwf.x", AgentID: "dave"})
			want := []string{"acquire k:queued erin", "renew Lwf.x dave", "release Lwf.x dave"}
			if fmt.Sprint(wf.Calls()) != fmt.Sprint(want) {
				t.Fatalf("workflow calls %v, want %v", wf.Calls(), want)
			}
			// Bad input names the field and changes nothing.
			if _, err := workers[0].Acquire(ctx, "k:bad", lease.AcquireRequest{AgentID: "erin", TTLSeconds: 0}); refusal(err) != lease.ErrInvalid {
				t.Fatalf("ttl 0: %v, want %s", err, lease.ErrInvalid)
			}
		})
	}
}

// TestSweepLingers ends, in one sweep, leases expiring close together,
// each no earlier than its expiry.
func TestSweepLingers(t *testing.T) {
	ctx := context.Background()
	stores := openStores(t, ssottest.Engines()[0].URL(t), 1)
	d := &Direct{Store: stores[0]}
	var leases []lease.Lease
	for i := range 3 {
		res, err := d.Acquire(ctx, fmt.Sprintf("k:linger/%d", i), lease.AcquireRequest{AgentID: "alice", TTLSeconds: 1})
		if err != nil || res.Lease == nil {
			t.Fatalf("acquire %d: %+v %v", i, res, err)
		}
		leases = append(leases, *res.Lease)
	}
	first := leases[0].ExpiresAt
	for time.Now().Before(first) {
		time.Sleep(time.Until(first))
	}
	res, err := (&Sweep{Store: stores[0]}).LeaseSweep(ctx, lease.SweepRequest{Cutoff: time.Now(), Linger: lease.SweepLinger})
	if err != nil || res.Expired != 3 || !res.Next.IsZero() || res.At.IsZero() {
		t.Fatalf("sweep: %+v %v, want all three ended", res, err)
	}
	for _, l := range leases {
		got, err := stores[0].Lease(ctx, l.LeaseID)
		if err != nil || got.State != lease.StateExpired || got.ReleasedAt.Before(got.ExpiresAt) {
			t.Fatalf("swept %+v %v, want expired no earlier than its expiry", got, err)
		}
	}
}

// TestBranchLeaseEndsAtItsTTL: a branch taken directly by a task that
// then stops renewing (terminated from outside Temporal) is ended by the
// sweeper at its expiry, and the branch is free for the next task.
func TestBranchLeaseEndsAtItsTTL(t *testing.T) {
	ctx := context.Background()
	stores := openStores(t, ssottest.Engines()[0].URL(t), 1)
	d := &dues{}
	b := Branches{Client: leasetest.New(), Store: stores[0], Expiry: d}
	in := activities.BranchLeaseInput{TaskID: "T-2026-001", Repo: "/src/app", Branch: "main", TTL: 10 * time.Minute}
	got, err := b.Acquire(ctx, in)
	if err != nil || got.Lease == nil || !got.Lease.Direct {
		t.Fatalf("acquire: %+v %v, want a direct lease", got, err)
	}
	if len(d.at) != 1 || !d.at[0].Equal(got.Lease.ExpiresAt) {
		t.Fatalf("sweeper woken for %v, want %s", d.at, got.Lease.ExpiresAt)
	}
	res, err := (&Sweep{Store: stores[0]}).LeaseSweep(ctx, lease.SweepRequest{Cutoff: got.Lease.ExpiresAt})
	if err != nil || res.Expired != 1 {
		t.Fatalf("sweep at the expiry: %+v %v", res, err)
	}
	if row, err := stores[0].Lease(ctx, got.Lease.LeaseID); err != nil || row.State != lease.StateExpired {
		t.Fatalf("the branch lease %+v %v, want expired", row, err)
	}
	in.TaskID = "T-2026-002"
	next, err := b.Acquire(ctx, in)
	if err != nil || next.Lease == nil || !next.Lease.Direct {
		t.Fatalf("the next task's acquire: %+v %v, want the branch", next, err)
	}
}
