package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TestUnsignedAnswer: a decide update naming an admin but not signed with
// the decision key (sent straight to Temporal, not through a channel) is
// refused as forbidden and changes nothing; the same answer signed is
// taken.
func TestUnsignedAnswer(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
	var before, after task.State
	var raw, forged *reply
	h.at(time.Minute, func() {
		before = h.state()
		a := decision.Answer{DecisionID: before.Pending.ID, Digest: before.Pending.Digest, Option: decision.OptApprove, By: "alice", Channel: "api"}
		raw = h.send(task.UpdateDecide, "", a)
		a.At, a.Signature = time.Now(), decision.SignAnswer(testDecisionKey, h.in.TaskID, decision.Answer{Option: decision.OptReject})
		forged = h.send(task.UpdateDecide, "", a)
	})
	h.at(2*time.Minute, func() {
		after = h.state()
		h.decide("alice", decision.OptReject, "no")
	})
	res := h.run()

	refused(t, raw, task.CodeForbidden)
	refused(t, forged, task.CodeForbidden)
	if after.Pending == nil || after.Pending.ID != before.Pending.ID || len(after.Decided) != 0 || after.Status != task.StatusAwaitingApproval {
		t.Errorf("an unsigned answer changed the task: %s, pending %+v, decided %+v", after.Status, after.Pending, after.Decided)
	}
	if res.Status != task.StatusTerminated {
		t.Errorf("status %s: the signed reject was not taken", res.Status)
	}
}

// TestUnsignedCommands: cancel and replan sent straight to Temporal,
// unsigned or altered after signing, are refused as forbidden and change
// nothing; signed as workflows.Client signs them, they are taken.
func TestUnsignedCommands(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
	var before, after task.State
	var rawCancel, forgedCancel, rawReplan, forgedReplan *reply
	h.at(time.Minute, func() {
		before = h.state()
		rawCancel = h.send(task.UpdateCancel, "", task.CancelInput{Reason: "stop", By: "alice"})
		c := task.CancelInput{Reason: "stop", By: "alice", Signed: decision.Signed{At: time.Now()}}
		c.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, must(c.SignedAs()))
		c.Reason = "something else"
		forgedCancel = h.send(task.UpdateCancel, "", c)
		subtasks := []amp.Subtask{{SubtaskID: "S9", Description: "x"}}
		rawReplan = h.send(task.UpdateReplan, "", task.ReplanInput{By: "alice", Subtasks: subtasks})
		r := task.ReplanInput{By: "alice", Subtasks: subtasks, Signed: decision.Signed{At: time.Now()}}
		r.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, must(r.SignedAs()))
		r.By = "bob"
		forgedReplan = h.send(task.UpdateReplan, "", r)
	})
	var signed *reply
	h.at(2*time.Minute, func() {
		after = h.state()
		signed = h.update(task.UpdateCancel, "", task.CancelInput{Reason: "superseded", By: "alice"})
	})
	res := h.run()

	for _, r := range []*reply{rawCancel, forgedCancel, rawReplan, forgedReplan} {
		refused(t, r, task.CodeForbidden)
	}
	if after.Status != before.Status || after.Pending == nil || after.Pending.ID != before.Pending.ID || len(after.Subtasks) != len(before.Subtasks) {
		t.Errorf("an unsigned command changed the task: %s → %s, pending %+v", before.Status, after.Status, after.Pending)
	}
	accepted(t, signed)
	if res.Status != task.StatusTerminated || !strings.Contains(res.Reason, "superseded") {
		t.Errorf("result %s %q: the signed cancel was not taken", res.Status, res.Reason)
	}
}
