package lease

import (
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
	update(env, 0, UpdateWait, waitReq("T-1"), func(AcquireResult, error) {})
	update(env, time.Second, UpdateWait, waitReq("T-2"), func(AcquireResult, error) {})
	refused := func(what string) func(LeaveResult, error) {
		return func(r LeaveResult, err error) {
			if errType(err) != ErrNotHolder || r.Left || r.Released != nil {
				t.Errorf("%s: %+v %v, want refused (%s)", what, r, err, ErrNotHolder)
			}
		}
	}
	update(env, 2*time.Second, UpdateLeave, LeaveRequest{AgentID: "T-1", Reason: ReasonTaskEnded}, refused("the holder's unsigned leave"))
	update(env, 3*time.Second, UpdateLeave, LeaveRequest{AgentID: "T-2"}, refused("a waiter's unsigned leave"))
	forged := signed(key, LeaveRequest{AgentID: "T-9", Reason: ReasonTaskEnded})
	forged.AgentID = "T-1"
	update(env, 4*time.Second, UpdateLeave, forged, refused("a leave signed for another agent"))
	update(env, 5*time.Second, UpdateLeave, LeaveRequest{AgentID: "T-9"}, func(r LeaveResult, err error) {
		if err != nil || r.Left || r.Released != nil {
			t.Errorf("a leave of nothing: %+v %v", r, err)
		}
	})
	update(env, 10*time.Second, UpdateLeave, signed(key, LeaveRequest{AgentID: "T-1", Reason: ReasonTaskEnded}), func(r LeaveResult, err error) {
		if err != nil || r.Released == nil || r.Released.AgentID != "T-1" {
			t.Errorf("the holder's signed leave: %+v %v", r, err)
		}
	})
	env.ExecuteWorkflow(Workflow, Input{ResourceKey: key})
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
	update(env, 0, UpdateAcquire, AcquireRequest{AgentID: "alice", TTLSeconds: 600}, func(r AcquireResult, err error) {
		if err != nil || r.Lease == nil {
			t.Fatalf("alice acquire: %+v %v", r, err)
		}
		id = r.Lease.LeaseID
	})
	env.RegisterDelayedCallback(func() {
		update(env, 0, UpdateRelease, ReleaseRequest{LeaseID: id, AgentID: "alice"}, func(r Lease, err error) {
			if errType(err) != ErrNotHolder {
				t.Errorf("an unsigned release by the holder's name: %+v %v, want %s", r, err, ErrNotHolder)
			}
		})
		update(env, time.Second, UpdateRelease, signedRelease(key, ReleaseRequest{LeaseID: id, AgentID: "alice"}), func(r Lease, err error) {
			if err != nil || r.State != StateReleased {
				t.Errorf("the signed release: %+v %v", r, err)
			}
		})
	}, time.Second)
	env.ExecuteWorkflow(Workflow, Input{ResourceKey: key})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.events(), []string{"lock.acquired alice", "lock.released alice"}; !equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}
