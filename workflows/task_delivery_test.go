package workflows

import (
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// failFirstDispatch makes the first dispatch's delivery fail as a
// command-mode agent that crashed does.
func failFirstDispatch(h *harness) {
	failed := false
	h.deliverErr = func(m amp.Message) error {
		if m.Type != amp.TypeTaskDispatch || failed {
			return nil
		}
		failed = true
		sum := "the executor agent exited with status 3 on " + m.MsgID
		return temporal.NewNonRetryableApplicationError(sum, activities.ErrDelivery, nil,
			activities.DeliveryFailure{Summary: sum, Stderr: "Traceback (most recent call last):\nKeyError: 'task_id'"})
	}
}

// TestDeliveryFailed checks that a delivery that fails goes to the admins
// at once, with the agent's stderr, rather than after the ACK timeout.
func TestDeliveryFailed(t *testing.T) {
	t.Run("Redispatched", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		failFirstDispatch(h)
		var during, after task.State
		h.at(5*time.Second, func() {
			during = h.state()
			h.decide("alice", task.OptRedispatch, "")
		})
		h.at(5*time.Second+500*time.Millisecond, func() { after = h.state() })
		h.round(6 * time.Second)
		res := h.run()

		if res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		d := during.Pending
		if d == nil || d.Kind != task.KindDeliveryFailed {
			t.Fatalf("pending decision %+v, want delivery_failed", d)
		}
		if got := d.RaisedAt.Sub(during.StartedAt); got > 5*time.Second {
			t.Errorf("raised after %s, want within seconds", got)
		}
		if !strings.Contains(d.Context.AgentStderr, "KeyError: 'task_id'") {
			t.Errorf("decision context stderr %q, want the agent's", d.Context.AgentStderr)
		}
		var opts []string
		for _, o := range d.Options {
			opts = append(opts, o.ID)
		}
		if strings.Join(opts, ",") != "redispatch,wait,terminate" {
			t.Errorf("options %v, want redispatch, wait, terminate", opts)
		}
		if le := during.LastError; !strings.Contains(le, "exited with status 3") || strings.Contains(le, "\n") || strings.Contains(le, "Traceback") {
			t.Errorf("Last error %q, want one line saying what failed", le)
		}
		if after.LastError != "" {
			t.Errorf("Last error %q after the redispatch, want it cleared", after.LastError)
		}
		// The escalation goes out before the question that it explains.
		escAt, askAt := -1, -1
		for i, e := range during.Timeline {
			switch {
			case escAt < 0 && e.Kind == "message" && e.Type == string(amp.TypeEscalation):
				escAt = i
			case askAt < 0 && e.Kind == "decision" && e.Type == string(task.KindDeliveryFailed):
				askAt = i
			}
		}
		if escAt < 0 || askAt < 0 || escAt > askAt {
			t.Errorf("timeline has the escalation at %d and the question at %d, want the escalation first", escAt, askAt)
		}
		esc := h.escalations()
		if len(esc) != 1 || esc[0].AffectedMsgs[0] != h.deliveredOf(amp.TypeTaskDispatch)[0].MsgID {
			t.Errorf("escalations %+v, want one naming the failed dispatch", esc)
		}
		if n := len(h.deliveredOf(amp.TypeTaskDispatch)); n != 2 {
			t.Errorf("%d dispatches, want 2", n)
		}
	})
	t.Run("WaitThenAck", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		failFirstDispatch(h)
		var after task.State
		h.at(5*time.Second, func() { h.decide("alice", task.OptWait, "") })
		// The agent answers through the API after all.
		h.round(6 * time.Second)
		h.at(7*time.Second+500*time.Millisecond, func() { after = h.state() })
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		if after.LastError != "" || after.Pending != nil {
			t.Errorf("after the ACK: Last error %q, pending %+v; want both cleared", after.LastError, after.Pending)
		}
	})
}
