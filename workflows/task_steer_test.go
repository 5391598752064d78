package workflows

import (
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestInterruptResumes: a runner's run ends interrupted (interrupt 5 in
// the store); the task waits without a process, a message sent before
// the interrupt does not resume it, and message 6, sent after, resumes
// the session with Resume.Interrupted; the task then completes.
func TestInterruptResumes(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	stopped := false
	h.deliverErr = func(m amp.Message) error {
		if m.Type != amp.TypeTaskDispatch || stopped {
			return nil
		}
		stopped = true
		return temporal.NewNonRetryableApplicationError("interrupted", activities.ErrInterrupted, nil,
			activities.Interrupted{By: "alice", ID: 5, SessionID: "sess-1"})
	}
	var waiting, stale task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(time.Minute, func() { waiting = h.state() })
	h.at(2*time.Minute, func() { h.env.SignalWorkflow(task.SignalSteer, task.SteerInput{ID: 4, By: "bob"}) })
	h.at(3*time.Minute, func() { stale = h.state() })
	h.at(4*time.Minute, func() { h.env.SignalWorkflow(task.SignalSteer, task.SteerInput{ID: 6, By: "alice"}) })
	h.at(5*time.Minute, func() { h.result(amp.StatusComplete) })
	h.at(5*time.Minute+time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(5*time.Minute+2*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("task %s: %s", res.Status, res.Reason)
	}
	if waiting.Interrupted == nil || waiting.Interrupted.By != "alice" || waiting.Interrupted.Role != "executor" || !hasTimeline(waiting, "interrupted") {
		t.Fatalf("while interrupted: %+v, timeline %v", waiting.Interrupted, waiting.Timeline)
	}
	if stale.Interrupted == nil || !hasTimeline(stale, "say") {
		t.Errorf("a message older than the interrupt resumed the run (or is not in the timeline): %+v", stale.Interrupted)
	}
	if len(h.deliverIns) < 2 || h.deliverIns[1].Resume == nil {
		t.Fatalf("no resumed delivery: %+v", h.deliverIns)
	}
	if r := h.deliverIns[1].Resume; !r.Interrupted || r.SessionID != "sess-1" {
		t.Errorf("resume: %+v", r)
	}
}
