package workflows

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// queued makes the branch lease's acquire find the branch held by holder.
func queued(h *harness, holder string) {
	h.acquireLease = func(activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
		return activities.BranchLeaseResult{Holder: holder, Queued: 1}, nil
	}
}

// grant passes the branch to the task as the lease workflow does: the
// lease system holds it for the task, then signals the grant.
func (h *harness) grant(leaseID string) {
	h.mu.Lock()
	h.acquireLease = func(in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
		return activities.BranchLeaseResult{Lease: &task.BranchLease{LeaseID: leaseID, ResourceKey: activities.BranchKey(in.Repo, in.Branch)}}, nil
	}
	h.mu.Unlock()
	h.env.SignalWorkflow(task.SignalLeaseGranted, task.LeaseGrant{Lease: task.BranchLease{LeaseID: leaseID, ResourceKey: "repo:x:y"}})
}

func TestBranchLease(t *testing.T) {
	t.Run("HeldAndReleased", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withRunners)
		var mid task.State
		h.at(500*time.Millisecond, func() { mid = h.state() })
		// A long round: the lease is renewed on its timer meanwhile.
		h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
		h.at(12*time.Minute, func() { h.result(amp.StatusComplete) })
		h.at(12*time.Minute+time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(12*time.Minute+2*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
		res := h.run()
		if res.Status != task.StatusDone {
			t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
		}
		if mid.Lease == nil || mid.Lease.LeaseID != "L1.x" || mid.Status != task.StatusDispatched {
			t.Errorf("after the start: status %s lease %+v, want dispatched holding L1.x", mid.Status, mid.Lease)
		}
		if len(h.leaseCalls) < 3 || h.leaseCalls[0] != "acquire" || h.leaseCalls[len(h.leaseCalls)-1] != "release" ||
			!slices.Contains(h.leaseCalls, "renew") {
			t.Errorf("lease calls %v, want acquire, renewals, release", h.leaseCalls)
		}
		if st := h.state(); st.Lease != nil {
			t.Errorf("the ended task still shows lease %+v", st.Lease)
		}
		checkCleanup(t, h)
	})

	t.Run("WaitsThenProceeds", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		queued(h, "T-2026-900")
		var waiting task.State
		var dispatchedWhileWaiting int
		h.at(20*time.Minute, func() {
			waiting = h.state()
			dispatchedWhileWaiting = len(h.deliveredOf(amp.TypeTaskDispatch))
		})
		h.at(30*time.Minute, func() { h.grant("L2.y") })
		h.round(30 * time.Minute)
		res := h.run()
		if res.Status != task.StatusDone {
			t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
		}
		if waiting.Status != task.StatusAwaitingLease || waiting.LeaseHolder != "T-2026-900" || waiting.Lease != nil {
			t.Errorf("while waiting: status %s holder %q lease %+v, want awaiting_lease behind T-2026-900", waiting.Status, waiting.LeaseHolder, waiting.Lease)
		}
		if dispatchedWhileWaiting != 0 {
			t.Errorf("%d dispatches before the lease was granted, want none", dispatchedWhileWaiting)
		}
		ds := h.deliveredOf(amp.TypeTaskDispatch)
		if len(ds) != 1 {
			t.Fatalf("dispatches %d, want 1", len(ds))
		}
		if got := h.leaseCalls[len(h.leaseCalls)-1]; got != "release" {
			t.Errorf("last lease call %s, want release", got)
		}
		if len(h.cleanups) != 0 {
			t.Errorf("worktree cleanups %+v with no runner", h.cleanups)
		}
	})

	t.Run("WaitDecision", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withRunners, func(in *task.Input) { in.Policy.LeaseWait = 10 * time.Minute })
		queued(h, "T-2026-900")
		var asked task.State
		h.at(11*time.Minute, func() {
			asked = h.state()
			h.decide("alice", task.OptWait, "")
		})
		var askedAgain task.State
		h.at(22*time.Minute, func() {
			askedAgain = h.state()
			h.decide("alice", task.OptTerminate, "")
		})
		res := h.run()
		if asked.Pending == nil || asked.Pending.Kind != task.KindLeaseWait || asked.Status != task.StatusAwaitingLease {
			t.Fatalf("after lease_wait: status %s pending %+v, want a lease_wait decision", asked.Status, asked.Pending)
		}
		if opts := asked.Pending.Options; len(opts) != 2 || opts[0].ID != task.OptWait || opts[1].ID != task.OptTerminate ||
			asked.Pending.OnExpiry != task.OptTerminate {
			t.Errorf("options %+v on_expiry %s, want wait, terminate; terminate", opts, asked.Pending.OnExpiry)
		}
		if askedAgain.Pending == nil || askedAgain.Pending.Kind != task.KindLeaseWait || askedAgain.Pending.ID == asked.Pending.ID {
			t.Errorf("after waiting again: pending %+v, want a new lease_wait decision", askedAgain.Pending)
		}
		if res.Status != task.StatusTerminated || len(h.deliveredOf(amp.TypeTaskDispatch)) != 0 {
			t.Errorf("status %s with %d dispatches, want terminated without one", res.Status, len(h.deliveredOf(amp.TypeTaskDispatch)))
		}
		if got := h.leaseCalls[len(h.leaseCalls)-1]; got != "release" {
			t.Errorf("last lease call %s, want release (leaving the queue)", got)
		}
		checkCleanup(t, h)
	})

	t.Run("GrantWithdrawsDecision", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Policy.LeaseWait = 10 * time.Minute })
		queued(h, "T-2026-900")
		h.at(15*time.Minute, func() { h.grant("L2.y") })
		var after task.State
		h.at(15*time.Minute+500*time.Millisecond, func() { after = h.state() })
		h.round(15 * time.Minute)
		res := h.run()
		if res.Status != task.StatusDone {
			t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
		}
		if after.Pending != nil || after.Lease == nil || after.Lease.LeaseID != "L2.y" {
			t.Errorf("after the grant: pending %+v lease %+v, want no decision and L2.y", after.Pending, after.Lease)
		}
	})

	t.Run("CancelledWhileWaiting", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		queued(h, "T-2026-900")
		h.at(5*time.Minute, func() { h.update(task.UpdateCancel, "", task.CancelInput{Reason: "no longer needed", By: "planner"}) })
		res := h.run()
		if res.Status != task.StatusTerminated {
			t.Fatalf("status %s, want terminated", res.Status)
		}
		if want := []string{"acquire", "release"}; !slices.Equal(h.leaseCalls, want) {
			t.Errorf("lease calls %v, want %v", h.leaseCalls, want)
		}
	})
}

// withRunners runs the task as with a runner-mode agent.
func withRunners(in *task.Input) { in.Policy.Runners = true }

// checkCleanup asserts that the ended task had its worktrees cleaned up
// once, before its lease was released, and said where the salvage went.
func checkCleanup(t *testing.T, h *harness) {
	t.Helper()
	if len(h.cleanups) != 1 || h.cleanups[0].in.TaskID != h.in.TaskID || h.cleanups[0].in.Repo != h.in.Plan.Repo {
		t.Fatalf("cleanups %+v, want one for %s", h.cleanups, h.in.TaskID)
	}
	if n := h.cleanups[0].leaseCallsBefore; n != len(h.leaseCalls)-1 {
		t.Errorf("the cleanup came after %d of the lease calls %v, want before the release", n, h.leaseCalls)
	}
	salvaged := false
	for _, e := range h.state().Timeline {
		salvaged = salvaged || e.Kind == "worktree" && strings.Contains(e.Note, "ampflow/salvage/"+h.in.TaskID+"/1")
	}
	if !salvaged {
		t.Error("the timeline does not say where the uncommitted work went")
	}
}
