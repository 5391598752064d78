package workflows

import (
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// Each result read makes one CI round: its readings carry the round and
// the subtask, and the task's state shows the last reading.
func TestCIRoundsNumberEachResult(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.ci = func(n int) activities.CIStatusResult {
		switch n {
		case 1:
			return activities.CIStatusResult{State: activities.CIFailed, Failing: []string{"unit-tests"}}
		case 2:
			return activities.CIStatusResult{State: activities.CIPending}
		}
		return activities.CIStatusResult{State: activities.CIPassed}
	}
	var afterFail task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(3*time.Second, func() { afterFail = h.state() })
	h.at(4*time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(5*time.Second, func() { h.result(amp.StatusComplete) })
	var final task.State
	h.at(40*time.Second, func() { final = h.state(); h.ack(amp.RoleReviewer) })
	h.at(41*time.Second, func() { h.verdict(amp.DecisionApproved, 0.9) })
	h.run()

	if len(h.ciInputs) != 3 {
		t.Fatalf("%d CI readings, want 3", len(h.ciInputs))
	}
	for i, want := range []int{1, 2, 2} {
		in := h.ciInputs[i]
		if in.Round != want || in.Subtask != "S1" || in.Last {
			t.Errorf("reading %d: round %d, subtask %q, last %v; want round %d of S1, not last", i+1, in.Round, in.Subtask, in.Last, want)
		}
	}
	if afterFail.CI != "failed" || afterFail.CIRound != 1 {
		t.Errorf("after the failing round: ci %q, ci_round %d; want failed, 1", afterFail.CI, afterFail.CIRound)
	}
	if final.CI != "passed" || final.CIRound != 2 {
		t.Errorf("at the end: ci %q, ci_round %d; want passed, 2", final.CI, final.CIRound)
	}
}

// The reading at the CI deadline is the round's last: pending then is a
// timeout, on the reading and on the task.
func TestCIRoundTimesOut(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Policy.CITimeout = time.Minute })
	h.ci = func(int) activities.CIStatusResult { return activities.CIStatusResult{State: activities.CIPending} }
	var st task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(5*time.Minute, func() { st = h.state() })
	h.at(5*time.Minute+time.Second, func() { h.decide("alice", task.OptTerminate, "") })
	h.run()

	n := len(h.ciInputs)
	if n < 2 {
		t.Fatalf("%d CI readings, want some before the deadline and one at it", n)
	}
	for i, in := range h.ciInputs {
		if in.Round != 1 || in.Last != (i == n-1) {
			t.Errorf("reading %d of %d: round %d, last %v; want round 1, last only on the final one", i+1, n, in.Round, in.Last)
		}
	}
	if st.CI != "timed_out" || st.WaitingFor != task.KindCIExhausted {
		t.Errorf("after the deadline: ci %q, waiting for %q; want timed_out, %s", st.CI, st.WaitingFor, task.KindCIExhausted)
	}
}

// A task whose policy has no CI says so: off, not passed.
func TestCIOffIsNotPassed(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Policy.CI = false })
	var st task.State
	end := h.round(0)
	h.at(end-time.Second, func() { st = h.state() })
	h.run()
	if st.CI != task.CIOff || st.CIRound != 0 || h.ciCalls != 0 {
		t.Errorf("without CI: ci %q, ci_round %d, %d readings; want off, 0, none", st.CI, st.CIRound, h.ciCalls)
	}
}
