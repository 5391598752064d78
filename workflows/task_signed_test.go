package workflows

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TestUnsignedSubmission: a task_result sent straight to Temporal, as an
// admin, with no sender (the worker's own standing) or under an agent's
// name re-signed for another, is refused as forbidden and the task still
// waits for its result; the same record signed as workflows.Client.Submit
// signs it is taken.
func TestUnsignedSubmission(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	var before, after task.State
	var asAdmin, anonymous, renamed *reply
	h.at(time.Minute, func() {
		before = h.state()
		m := h.resultMsg(amp.StatusComplete)
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		asAdmin = h.send(task.UpdateSubmit, m.MsgID+"#a", task.SubmitInput{Raw: raw, By: "alice", Admin: true})
		anonymous = h.send(task.UpdateSubmit, m.MsgID+"#b", task.SubmitInput{Raw: raw})
		in := task.SubmitInput{Raw: raw, By: "exec-a", Signed: decision.Signed{At: time.Now()}}
		in.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, must(in.SignedAs()))
		in.By = "exec-b"
		renamed = h.send(task.UpdateSubmit, m.MsgID+"#c", in)
	})
	h.at(time.Minute+time.Second, func() { after = h.state() })
	h.at(2*time.Minute, func() { h.result(amp.StatusComplete) })
	h.at(2*time.Minute+time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(2*time.Minute+2*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	res := h.run()

	for _, r := range []*reply{asAdmin, anonymous, renamed} {
		refused(t, r, task.CodeForbidden)
	}
	kept := h.refusals.kept()
	if len(kept) != 3 {
		t.Errorf("error log %+v, want the 3 unsigned submissions", kept)
	}
	for _, e := range kept {
		if e.Source != activities.ErrorSourceDecide || e.TaskID != testTaskID || !strings.Contains(e.Reason, "command:"+task.UpdateSubmit) {
			t.Errorf("error log entry %+v, want a refused submit of %s from source %s", e, testTaskID, activities.ErrorSourceDecide)
		}
	}
	if before.Status != task.StatusInProgress || after.Status != before.Status || len(after.Timeline) != len(before.Timeline) ||
		len(after.Holders) != len(before.Holders) || after.ResultChecked != "" {
		t.Errorf("an unsigned submission changed the task: %s → %s, timeline %d → %d, holders %+v → %+v",
			before.Status, after.Status, len(before.Timeline), len(after.Timeline), before.Holders, after.Holders)
	}
	if res.Status != task.StatusDone {
		t.Errorf("result %s (%s): the signed submissions were not taken", res.Status, res.Reason)
	}
}

// TestUnsignedRecoveredHeartbeat: a recovered heartbeat signalled straight
// to Temporal, unsigned or altered after signing, sends nothing again; the
// same heartbeat signed redispatches at once.
func TestUnsignedRecoveredHeartbeat(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	var unsigned, signed int
	h.at(5*time.Minute, func() {
		h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Recovered: true})
		h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Admin: true, By: "alice"})
		in := task.HeartbeatInput{From: amp.RoleExecutor, Note: "alive", Signed: decision.Signed{At: time.Now()}}
		in.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, must(in.SignedAs()))
		in.Recovered = true
		h.env.SignalWorkflow(task.SignalHeartbeat, in)
	})
	h.at(5*time.Minute+time.Second, func() {
		unsigned = len(h.deliveredOf(amp.TypeTaskDispatch))
		h.heartbeat(task.HeartbeatInput{From: amp.RoleExecutor, Recovered: true})
	})
	h.at(5*time.Minute+2*time.Second, func() { signed = len(h.deliveredOf(amp.TypeTaskDispatch)) })
	h.round(6 * time.Minute)
	res := h.run()

	if unsigned != 1 {
		t.Errorf("%d dispatches after unsigned recovered heartbeats, want the first only", unsigned)
	}
	if signed != 2 {
		t.Errorf("%d dispatches after a signed recovered heartbeat, want it sent again", signed)
	}
	if res.Status != task.StatusDone {
		t.Errorf("result %s (%s), want done", res.Status, res.Reason)
	}
}

// TestForgedLeaseGrant: a lease_granted signal the lease system did not
// make (a raw Temporal signal) does not give the task its branch: the
// task asks the lease system again, stays in awaiting_lease and notes the
// refused grant; the lease system's own grant lets it proceed.
func TestForgedLeaseGrant(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	queued(h, "T-2026-900")
	var forged task.State
	var dispatched int
	h.at(5*time.Minute, func() {
		h.env.SignalWorkflow(task.SignalLeaseGranted, task.LeaseGrant{Lease: task.BranchLease{LeaseID: "L9.forged", ResourceKey: "repo:x:y"}})
	})
	h.at(6*time.Minute, func() {
		forged = h.state()
		dispatched = len(h.deliveredOf(amp.TypeTaskDispatch))
	})
	h.at(10*time.Minute, func() { h.grant("L2.y") })
	var granted task.State
	h.at(10*time.Minute+time.Second, func() { granted = h.state() })
	h.round(10 * time.Minute)
	res := h.run()

	if forged.Status != task.StatusAwaitingLease || forged.Lease != nil || dispatched != 0 {
		t.Errorf("after a forged grant: status %s, lease %+v, %d dispatches; want still awaiting_lease", forged.Status, forged.Lease, dispatched)
	}
	noted := false
	for _, e := range forged.Timeline {
		noted = noted || (e.Kind == "lease" && strings.Contains(e.Note, "refused a grant") && strings.Contains(e.Note, "L9.forged"))
	}
	if !noted {
		t.Errorf("the forged grant is not noted in the timeline: %+v", forged.Timeline)
	}
	if granted.Lease == nil || granted.Lease.LeaseID != "L2.y" {
		t.Errorf("after the lease system's grant: lease %+v, want L2.y", granted.Lease)
	}
	if res.Status != task.StatusDone {
		t.Errorf("result %s (%s), want done", res.Status, res.Reason)
	}
}
