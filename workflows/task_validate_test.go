package workflows

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestSubmitCheckedInValidator: the signatures of an approved lifecycle's
// four submissions are checked in the submit validator, which writes no
// marker: the only VerifyAnswer local activity is the admin heartbeat's,
// a signal, which has no validator. An unsigned exact repeat of an
// accepted ACK is answered as a duplicate, unchecked, keeping nothing.
func TestSubmitCheckedInValidator(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var verifies int
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "VerifyAnswer" {
			verifies++
		}
	})
	var first, repeat *reply
	h.at(time.Second, func() {
		m := h.outboxTo(amp.RoleExecutor)
		raw, err := json.Marshal(amp.NewAck(amp.RoleExecutor, m, h.env.Now()))
		if err != nil {
			t.Fatal(err)
		}
		first = h.update(task.UpdateSubmit, "ack", task.SubmitInput{Raw: raw})
		repeat = h.send(task.UpdateSubmit, "ack-again", task.SubmitInput{Raw: raw})
	})
	h.at(time.Minute, func() { h.heartbeat(task.HeartbeatInput{From: amp.RoleExecutor, Admin: true, By: "alice"}) })
	h.at(2*time.Minute, func() { h.result(amp.StatusComplete) })
	h.at(2*time.Minute+time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(2*time.Minute+2*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	res := h.run()

	if res.Status != task.StatusDone {
		t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
	}
	accepted(t, first)
	accepted(t, repeat)
	if out, ok := repeat.out.(task.SubmitResult); !ok || !out.Duplicate {
		t.Errorf("unsigned repeat answered %+v, want a duplicate", repeat.out)
	}
	if verifies != 1 {
		t.Errorf("%d VerifyAnswer local activities, want 1 (the heartbeat's, none for the submissions)", verifies)
	}
	if kept := h.refusals.kept(); len(kept) != 0 {
		t.Errorf("error log %+v, want nothing refused", kept)
	}
}

// TestSubmitWithoutChecker: a worker built without decide.Interceptor
// has no key in its validators, and takes no submission, signed or not:
// it is refused as internal and changes nothing.
func TestSubmitWithoutChecker(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.env.SetWorkerOptions(worker.Options{})
	var before, after task.State
	var ack *reply
	h.at(time.Second, func() {
		before = h.state()
		ack = h.ack(amp.RoleExecutor)
	})
	h.at(2*time.Second, func() {
		after = h.state()
		h.env.CancelWorkflow()
	})
	h.env.ExecuteWorkflow(Task, h.in)

	refused(t, ack, task.CodeInternal)
	if after.Status != before.Status || len(after.Outbox) != len(before.Outbox) || len(after.Timeline) != len(before.Timeline) {
		t.Errorf("a refused ACK changed the task: %s → %s, outbox %d → %d, timeline %d → %d",
			before.Status, after.Status, len(before.Outbox), len(after.Outbox), len(before.Timeline), len(after.Timeline))
	}
}
