package workflows

import (
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestAgentRecovered: an executor that reports a restart after a crash
// while the task waits for its result gets the dispatch again at once,
// without waiting out the heartbeat timeout or asking an admin; a
// recovery report when nothing is awaited from it changes nothing.
func TestAgentRecovered(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	var before, after task.State
	h.at(5*time.Minute, func() {
		before = h.state()
		// the reviewer is not awaited: nothing happens
		h.heartbeat(task.HeartbeatInput{From: amp.RoleReviewer, Recovered: true})
		h.heartbeat(task.HeartbeatInput{From: amp.RoleExecutor, Note: "restarted", Recovered: true})
	})
	h.at(5*time.Minute+time.Second, func() { after = h.state() })
	h.round(6 * time.Minute)
	res := h.run()

	if before.Status != task.StatusInProgress {
		t.Fatalf("before the recovery: status %s, want in_progress", before.Status)
	}
	dispatches := h.deliveredOf(amp.TypeTaskDispatch)
	if len(dispatches) != 2 || dispatches[0].MsgID == dispatches[1].MsgID {
		t.Fatalf("dispatches %d, want the first and one sent again on recovery", len(dispatches))
	}
	if after.Pending != nil {
		t.Errorf("a decision was raised on recovery: %+v", after.Pending)
	}
	if res.Status != task.StatusDone {
		t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
	}
}
