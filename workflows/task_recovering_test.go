package workflows

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestRunRecovering: a worker's word that the executor's run died makes
// the task report recovering over in_progress, naming the run, in its
// state and in the SSOT, until the retried run's first heartbeat; an
// unsigned word, or one about a role the task does not wait for, changes
// nothing.
func TestRunRecovering(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	var ignored, recovering, resumed task.State
	var dispatch string
	h.at(5*time.Minute, func() {
		dispatch = h.deliveredOf(amp.TypeTaskDispatch)[0].MsgID
		h.heartbeat(task.HeartbeatInput{Recovering: &task.Recovery{Role: amp.RoleReviewer, MsgID: "review_request-x"}})
		h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{Recovering: &task.Recovery{Role: amp.RoleExecutor, MsgID: dispatch}})
	})
	h.at(5*time.Minute+time.Second, func() {
		ignored = h.state()
		h.heartbeat(task.HeartbeatInput{Note: "the worker died", Recovering: &task.Recovery{Role: amp.RoleExecutor, MsgID: dispatch, Session: "S-1", Note: "the worker died"}})
	})
	h.at(5*time.Minute+2*time.Second, func() { recovering = h.state() })
	h.at(5*time.Minute+10*time.Second, func() { h.heartbeat(task.HeartbeatInput{From: amp.RoleExecutor, Note: "Bash go test"}) })
	h.at(5*time.Minute+11*time.Second, func() { resumed = h.state() })
	h.at(6*time.Minute, func() { h.result(amp.StatusComplete) })
	h.at(6*time.Minute+time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(6*time.Minute+2*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	res := h.run()

	if ignored.Status != task.StatusInProgress || ignored.Recovering != nil {
		t.Errorf("after an unsigned word and one about the reviewer: status %s, recovering %+v; want in_progress, none", ignored.Status, ignored.Recovering)
	}
	r := recovering.Recovering
	if recovering.Status != task.StatusRecovering || recovering.UnderlyingStatus != task.StatusInProgress || r == nil ||
		r.Role != amp.RoleExecutor || r.MsgID != dispatch || r.Session != "S-1" || r.Since.IsZero() {
		t.Fatalf("while recovering: status %s over %s, recovering %+v", recovering.Status, recovering.UnderlyingStatus, r)
	}
	if resumed.Status != task.StatusInProgress || resumed.UnderlyingStatus != "" || resumed.Recovering != nil {
		t.Errorf("after the retried run's heartbeat: status %s over %s, recovering %+v; want in_progress", resumed.Status, resumed.UnderlyingStatus, resumed.Recovering)
	}
	// The SSOT's rows (task list --status, the dashboard) had recovering
	// and then in_progress again.
	var saved []task.Status
	h.mu.Lock()
	for _, in := range h.recordIns {
		var v struct {
			Status task.Status `json:"status"`
		}
		if len(in.Task) > 0 && json.Unmarshal(in.Task, &v) == nil && (len(saved) == 0 || saved[len(saved)-1] != v.Status) {
			saved = append(saved, v.Status)
		}
	}
	h.mu.Unlock()
	i := slices.Index(saved, task.StatusRecovering)
	if i < 1 || saved[i-1] != task.StatusInProgress || i+1 >= len(saved) || saved[i+1] != task.StatusInProgress {
		t.Errorf("saved statuses %v, want in_progress, recovering, in_progress", saved)
	}
	if res.Status != task.StatusDone {
		t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
	}
}

// TestRunRecoveringEnds: a recovery ends when a reply moves the task on.
func TestRunRecoveringEnds(t *testing.T) {
	t.Run("Replied", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
		var after task.State
		h.at(time.Minute, func() {
			id := h.deliveredOf(amp.TypeTaskDispatch)[0].MsgID
			h.heartbeat(task.HeartbeatInput{Recovering: &task.Recovery{Role: amp.RoleExecutor, MsgID: id}})
		})
		h.at(time.Minute+time.Second, func() { h.result(amp.StatusComplete) })
		h.at(time.Minute+2*time.Second, func() { after = h.state() })
		h.at(time.Minute+3*time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(time.Minute+4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
		res := h.run()
		if after.Status == task.StatusRecovering || after.Recovering != nil {
			t.Errorf("after the result: status %s, recovering %+v", after.Status, after.Recovering)
		}
		if res.Status != task.StatusDone {
			t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
		}
	})
}
