package workflows

import (
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// benchShape is the policy ampflow bench runs tasks with: the defaults,
// CI off.
func benchShape(in *task.Input) { in.Policy.CI = false }

// timers lists the duration of every timer the workflow starts.
func (h *harness) timers() func() []time.Duration {
	var started []time.Duration
	h.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		h.mu.Lock()
		defer h.mu.Unlock()
		started = append(started, d)
	})
	return func() []time.Duration {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.Clone(started)
	}
}

// renewals counts the branch lease renewals made so far.
func (h *harness) renewals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.leaseCalls {
		if c == "renew" {
			n++
		}
	}
	return n
}

// TestApprovedLifecycleTimers: the lease renewer's timer, started first,
// serves every wait of an approved lifecycle, whose deadlines (the
// dispatch's ACK at 300s, the executor's silence at 1800s, the review
// request's ACK at 600s, the reviewer's silence at 1800s) all come at or
// after it.
func TestApprovedLifecycleTimers(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), benchShape)
	timers := h.timers()
	h.round(0)
	res := h.run()

	if res.Status != task.StatusDone {
		t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
	}
	if got := timers(); !slices.Equal(got, []time.Duration{branchLeaseRenew}) {
		t.Errorf("timers started %v, want the one of the lease renewal (%s)", got, branchLeaseRenew)
	}
}

// TestSharedDeadlinesFire has an agent go silent at each wait of a
// lifecycle: the wait's deadline comes after the pending timer, which
// fires first, and the wait times out at its own deadline all the same.
func TestSharedDeadlinesFire(t *testing.T) {
	cases := []struct {
		name  string
		play  func(h *harness)
		kind  decision.Kind
		at    time.Duration // the deadline, from the start
		renew int           // lease renewals by then
	}{
		{"DispatchAckTimedOut", func(*harness) {}, task.KindAckTimeout, 300 * time.Second, 1},
		{"ExecutorSilent", func(h *harness) {
			h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
		}, task.KindHeartbeatTimeout, 1801 * time.Second, 6},
		{"ReviewAckTimedOut", func(h *harness) {
			h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
			h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
		}, task.KindAckTimeout, 602 * time.Second, 2},
		{"ReviewerSilent", func(h *harness) {
			h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
			h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
			h.at(3*time.Second, func() { h.ack(amp.RoleReviewer) })
		}, task.KindHeartbeatTimeout, 1803 * time.Second, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, testPlan(amp.RiskLow, "S1"), benchShape)
			timers := h.timers()
			c.play(h)
			var before, after task.State
			var renewed int
			h.at(c.at-time.Millisecond, func() { before = h.state() })
			h.at(c.at+time.Second, func() {
				after, renewed = h.state(), h.renewals()
				h.decide("alice", task.OptTerminate, "")
			})
			res := h.run()

			if before.Pending != nil {
				t.Errorf("decision %s raised before the deadline", before.Pending.Kind)
			}
			if after.Pending == nil || after.Pending.Kind != c.kind {
				t.Fatalf("pending %+v after the deadline, want %s", after.Pending, c.kind)
			}
			if got := after.Pending.RaisedAt.Sub(after.StartedAt); got != c.at {
				t.Errorf("%s raised at +%s, want +%s", c.kind, got, c.at)
			}
			if renewed != c.renew {
				t.Errorf("%d lease renewals by +%s, want %d (one every %s)", renewed, c.at+time.Second, c.renew, branchLeaseRenew)
			}
			if res.Status != task.StatusTerminated {
				t.Errorf("status %s, want terminated", res.Status)
			}
			if got := timers(); len(got) == 0 || got[0] != branchLeaseRenew {
				t.Errorf("timers started %v, want the lease renewal's first", got)
			}
		})
	}
}

// TestEarlierDeadlineFires: a wait whose deadline comes before the pending
// timer starts its own and times out on it.
func TestEarlierDeadlineFires(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), benchShape, func(in *task.Input) {
		in.Policy.HeartbeatTimeout = 20 * time.Second
	})
	timers := h.timers()
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	var st task.State
	h.at(22*time.Second, func() { st = h.state(); h.decide("alice", task.OptTerminate, "") })
	h.run()

	if st.Pending == nil || st.Pending.Kind != task.KindHeartbeatTimeout {
		t.Fatalf("pending %+v, want heartbeat_timeout", st.Pending)
	}
	if got := st.Pending.RaisedAt.Sub(st.StartedAt); got != 21*time.Second {
		t.Errorf("heartbeat_timeout raised at +%s, want +21s", got)
	}
	if got := timers(); !slices.Contains(got, 20*time.Second) {
		t.Errorf("timers started %v, want one for the silence's 20s", got)
	}
}

// TestDeadlineAfterContinueAsNew: timers end with a run, so the next run
// starts its own for a deadline set in the first.
func TestDeadlineAfterContinueAsNew(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), benchShape)
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h2 := continueAt(t, h, 2*time.Second)
	timers := h2.timers()
	var st task.State
	h2.at(30*time.Minute+time.Second, func() { st = h2.state(); h2.decide("alice", task.OptTerminate, "") })
	h2.run()

	// The ACK at +1s set the silence's deadline to +30m1s; the unclaimed
	// heartbeat at +2s only woke the run.
	if st.Pending == nil || st.Pending.Kind != task.KindHeartbeatTimeout {
		t.Fatalf("pending %+v, want heartbeat_timeout", st.Pending)
	}
	if got := st.Pending.RaisedAt.Sub(st.StartedAt); got != time.Second+30*time.Minute {
		t.Errorf("heartbeat_timeout raised at +%s, want +30m1s", got)
	}
	if len(timers()) == 0 {
		t.Error("the new run started no timer")
	}
}

// TestCancelledWhileWaiting: a workflow cancelled in Temporal while a
// wait's timer is pending ends cancelled.
func TestCancelledWhileWaiting(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), benchShape)
	var started time.Time
	h.at(10*time.Second, func() { started = h.state().StartedAt; h.env.CancelWorkflow() })
	h.env.ExecuteWorkflow(Task, h.in)
	if !h.env.IsWorkflowCompleted() {
		t.Fatal("the cancelled workflow did not end")
	}
	if err := h.env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Errorf("workflow ended with %v, want cancelled", err)
	}
	if got := h.env.Now().Sub(started); got != 10*time.Second {
		t.Errorf("ended at +%s, want +10s", got)
	}
}
