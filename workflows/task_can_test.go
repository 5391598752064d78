package workflows

import (
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestContinueAsNewCarriesState continues a task as new while it waits for
// a result, then finishes it in the next run: nothing is sent twice and
// the first run's messages stay the task's.
func TestContinueAsNewCarriesState(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() {
		h.env.SetContinueAsNewSuggested(true)
		h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Note: "wake"})
	})
	h.env.ExecuteWorkflow(Task, h.in)
	var can *workflow.ContinueAsNewError
	if !errors.As(h.env.GetWorkflowError(), &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", h.env.GetWorkflowError())
	}
	var next task.Input
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if len(next.Carried) == 0 {
		t.Fatal("continue-as-new carried no state")
	}
	first := h.deliveredOf(amp.TypeTaskDispatch)
	resumeAt := h.env.Now()

	h2 := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h2.in = next
	h2.env.SetStartTime(resumeAt)
	var st task.State
	h2.at(500*time.Millisecond, func() { st = h2.state() })
	h2.at(time.Second, func() { h2.result(amp.StatusComplete) })
	h2.at(2*time.Second, func() { h2.ack(amp.RoleReviewer) })
	h2.at(3*time.Second, func() { h2.verdict(amp.DecisionApproved, 0.9) })
	res := h2.run()

	if st.Status != task.StatusInProgress || st.Rounds != 1 {
		t.Errorf("the new run starts %s after %d rounds, want in_progress after 1", st.Status, st.Rounds)
	}
	if n := len(h2.deliveredOf(amp.TypeTaskDispatch)); n != 0 {
		t.Errorf("the new run dispatched %d times, want none", n)
	}
	if res.Status != task.StatusDone || len(first) != 1 || res.MsgIDs[0] != first[0].MsgID {
		t.Errorf("result %+v does not continue the first run's dispatch %s", res, first[0].MsgID)
	}
	// The SSOT orders a task's states by Rev: it goes on rising in the new
	// run, so no state of the new run is taken for a late retry.
	revs := append(append([]int64(nil), h.revs...), h2.revs...)
	if len(h.revs) == 0 || len(h2.revs) == 0 {
		t.Fatalf("record revs %v then %v: want batches in both runs", h.revs, h2.revs)
	}
	for i, r := range revs {
		if r != int64(i+1) {
			t.Fatalf("record revs %v then %v: want 1, 2, 3… across continue-as-new", h.revs, h2.revs)
		}
	}
}
