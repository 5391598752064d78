package workflows

import (
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/decision"
	"github.com/ampflow/ampflow/workflows/task"
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
