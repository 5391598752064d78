package lease

import (
	"github.com/ampflow/ampflow/amp/lease"
	"testing"
	"time"
)

// TestUnsignedLeave: a leave sent straight to Temporal, unsigned or
// altered after signing, frees no key and drops no waiter; a leave that
// gives up nothing needs no signature; signed as Client signs it, the
// holder's leave hands the key on.
func TestUnsignedLeave(t *testing.T) {
	const key = "repo:app:main"
	env, rec := newEnv(t)
	g := &grants{}
	g.mock(env)
	update(env, 0, lease.UpdateWait, waitReq("T-1"), func(lease.AcquireResult, error) {})
	update(env, time.Second, lease.UpdateWait, waitReq("T-2"), func(lease.AcquireResult, error) {})
	refused := func(what string) func(lease.LeaveResult, error) {
		return func(r lease.LeaveResult, err error) {
			if errType(err) != lease.ErrNotHolder || r.Left || r.Released != nil {
				t.Errorf("%s: %+v %v, want refused (%s)", what, r, err, lease.ErrNotHolder)
			}
		}
	}
	update(env, 2*time.Second, lease.UpdateLeave, lease.LeaveRequest{AgentID: "T-1", Reason: lease.ReasonTaskEnded}, refused("the holder's unsigned leave"))
	update(env, 3*time.Second, lease.UpdateLeave, lease.LeaveRequest{AgentID: "T-2"}, refused("a waiter's unsigned leave"))
	forged := signed(key, lease.LeaveRequest{AgentID: "T-9", Reason: lease.ReasonTaskEnded})
	forged.AgentID = "T-1"
	update(env, 4*time.Second, lease.UpdateLeave, forged, refused("a leave signed for another agent"))
	update(env, 5*time.Second, lease.UpdateLeave, lease.LeaveRequest{AgentID: "T-9"}, func(r lease.LeaveResult, err error) {
		if err != nil || r.Left || r.Released != nil {
			t.Errorf("a leave of nothing: %+v %v", r, err)
		}
	})
	update(env, 10*time.Second, lease.UpdateLeave, signed(key, lease.LeaveRequest{AgentID: "T-1", Reason: lease.ReasonTaskEnded}), func(r lease.LeaveResult, err error) {
		if err != nil || r.Released == nil || r.Released.AgentID != "T-1" {
			t.Errorf("the holder's signed leave: %+v %v", r, err)
		}
	})
	env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: key})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	want := []string{"lock.acquired T-1", "lock.released T-1", "lock.acquired T-2", "lock.auto_released T-2"}
	if got := rec.events(); !equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if want := []string{"wf-T-2 T-2"}; !equal(g.to, want) {
		t.Errorf("grants %v, want %v", g.to, want)
	}
}

// TestUnsignedRelease: a release naming the holder, sent straight to
// Temporal, does not free the key; signed as Client signs it, it does.
func TestUnsignedRelease(t *testing.T) {
	const key = "repo:app:dev"
	env, rec := newEnv(t)
	var id string
	update(env, 0, lease.UpdateAcquire, lease.AcquireRequest{AgentID: "alice", TTLSeconds: 600}, func(r lease.AcquireResult, err error) {
		if err != nil || r.Lease == nil {
			t.Fatalf("alice acquire: %+v %v", r, err)
		}
		id = r.Lease.LeaseID
	})
	env.RegisterDelayedCallback(func() {
		update(env, 0, lease.UpdateRelease, lease.ReleaseRequest{LeaseID: id, AgentID: "alice"}, func(r lease.Lease, err error) {
			if errType(err) != lease.ErrNotHolder {
				t.Errorf("an unsigned release by the holder's name: %+v %v, want %s", r, err, lease.ErrNotHolder)
			}
		})
		update(env, time.Second, lease.UpdateRelease, signedRelease(key, lease.ReleaseRequest{LeaseID: id, AgentID: "alice"}), func(r lease.Lease, err error) {
			if err != nil || r.State != lease.StateReleased {
				t.Errorf("the signed release: %+v %v", r, err)
			}
		})
	}, time.Second)
	env.ExecuteWorkflow(Workflow, lease.Input{ResourceKey: key})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.events(), []string{"lock.acquired alice", "lock.released alice"}; !equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}
