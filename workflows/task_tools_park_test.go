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

// parkFirstDispatch makes the first dispatch's delivery end parked on
// tool call tc1 of session sess-1, as a runner whose ask timed out does.
func parkFirstDispatch(h *harness) {
	parked := false
	h.deliverErr = func(m amp.Message) error {
		if m.Type != amp.TypeTaskDispatch || parked {
			return nil
		}
		parked = true
		return temporal.NewNonRetryableApplicationError("parked", activities.ErrParked, nil,
			activities.Parked{ToolCallID: testTaskID + "-tc1", SessionID: "sess-1"})
	}
}

// TestToolPark: a runner parks on its ask (the delivery ends ErrParked);
// the task waits with no question of its own while the ask stays open
// past ask_timeout, then, once the admin allows it, delivers again with
// the session and the answer; the resumed run's same call is the answered
// one, recorded once.
func TestToolPark(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	parkFirstDispatch(h)
	call := task.ToolCall{Agent: "exec", CLI: "claude", Tool: "Bash", Kind: "shell", Input: `{"command":"curl x"}`, InputDigest: "d-curl",
		CWD: "/w", Action: "ask", Rule: "ask-network", Risk: "medium", AskTimeout: 2 * time.Second, ParkTimeout: 24 * time.Hour}
	var ask, again *reply
	var waiting task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { ask = h.update(task.UpdateToolCall, "", call) })
	// Hours later, long past ask_timeout and the heartbeat timeout, the
	// ask is still open and nothing else was asked.
	h.at(5*time.Hour, func() { waiting = h.state(); h.decide("alice", task.OptAllowOnce, "") })
	h.at(5*time.Hour+time.Second, func() { again = h.update(task.UpdateToolCall, "", call) })
	h.at(5*time.Hour+2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(5*time.Hour+3*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(5*time.Hour+4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	res := h.run()
	if res.Status != task.StatusDone {
		t.Fatalf("task %s: %s", res.Status, res.Reason)
	}
	accepted(t, ask)
	accepted(t, again)
	if waiting.Pending == nil || waiting.Pending.Kind != task.KindToolCall {
		t.Fatalf("the parked ask is not the open question: %+v", waiting.Pending)
	}
	if !hasTimeline(waiting, "parked") || waiting.PausedUntil.IsZero() {
		t.Errorf("parked: timeline %v, paused_until %s", waiting.Timeline, waiting.PausedUntil)
	}
	if len(h.deliverIns) < 2 || h.deliverIns[1].Resume == nil {
		t.Fatalf("no resumed delivery: %+v", h.deliverIns)
	}
	r := h.deliverIns[1].Resume
	if r.ToolCallID != testTaskID+"-tc1" || r.SessionID != "sess-1" || r.Decision != task.ToolAllow || r.By != "alice" {
		t.Errorf("resume: %+v", r)
	}
	if c := again.out.(task.ToolCall); c.ID != testTaskID+"-tc1" || c.Decision != task.ToolAllow || c.By != "alice" {
		t.Errorf("the resumed call: %+v", c)
	}
	calls := h.toolCalls()
	if len(calls) != 1 {
		t.Errorf("%d tool calls recorded, want 1: %+v", len(calls), calls)
	}
	n := 0
	for id := range h.recordIDs() {
		if strings.HasPrefix(id, testTaskID+"-tc1") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d records of the call, want 2 (the ask and its outcome)", n)
	}
}

// TestToolParkDenied: a parked ask the admin denies resumes the run told
// so, with the note.
func TestToolParkDenied(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	parkFirstDispatch(h)
	call := task.ToolCall{Agent: "exec", CLI: "codex", Tool: "Bash", Kind: "shell", Input: `{"command":"curl x"}`, InputDigest: "d-curl",
		CWD: "/w", Action: "ask", Rule: "ask-network", Risk: "medium", AskTimeout: 2 * time.Second, ParkTimeout: 24 * time.Hour}
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.update(task.UpdateToolCall, "", call) })
	h.at(time.Hour, func() { h.decide("alice", task.OptDeny, "use the mirror") })
	h.at(time.Hour+2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(time.Hour+3*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(time.Hour+4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("task %s: %s", res.Status, res.Reason)
	}
	if len(h.deliverIns) < 2 || h.deliverIns[1].Resume == nil {
		t.Fatalf("no resumed delivery: %+v", h.deliverIns)
	}
	if r := h.deliverIns[1].Resume; r.Decision != task.ToolDeny || r.By != "alice" || !strings.Contains(r.Note, "use the mirror") {
		t.Errorf("resume: %+v", r)
	}
}

// TestToolParkDestination: a run the egress proxy parked on a
// destination's ask resumes told which destination the admins allowed.
func TestToolParkDestination(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	parkFirstDispatch(h)
	call := task.ToolCall{Agent: "exec", CLI: "egress", Tool: "connect", Kind: "network", Input: `{"host":"10.0.0.7","port":"8080"}`,
		InputDigest: "d-dest", CWD: "/w", Action: "ask", Rule: "ask-egress", Risk: "medium", AskTimeout: 2 * time.Second, ParkTimeout: 24 * time.Hour}
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.update(task.UpdateToolCall, "", call) })
	h.at(time.Hour, func() { h.decide("alice", task.OptAllowOnce, "") })
	h.at(time.Hour+2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(time.Hour+3*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(time.Hour+4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("task %s: %s", res.Status, res.Reason)
	}
	if len(h.deliverIns) < 2 || h.deliverIns[1].Resume == nil {
		t.Fatalf("no resumed delivery: %+v", h.deliverIns)
	}
	if r := h.deliverIns[1].Resume; r.Decision != task.ToolAllow || r.Destination != "10.0.0.7:8080" {
		t.Errorf("resume: %+v", r)
	}
}

// TestToolAllowRepo: a destination's ask offers to allow it for every
// task of the repository; that answer allows the call, is recorded with
// its option (where the API finds it for the next task), and allows the
// destination for the rest of this task too.
func TestToolAllowRepo(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	call := task.ToolCall{Agent: "exec", CLI: "egress", Tool: "connect", Kind: "network", Input: `{"host":"10.0.0.7","port":"8080"}`,
		InputDigest: "d-dest", CWD: "/w", Action: "ask", Rule: "ask-egress", Risk: "medium", AskTimeout: time.Hour, ParkTimeout: 24 * time.Hour}
	var asked task.State
	var again *reply
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.update(task.UpdateToolCall, "", call) })
	h.at(3*time.Second, func() { asked = h.state(); h.decide("alice", task.OptAllowRepo, "") })
	h.at(4*time.Second, func() { again = h.update(task.UpdateToolCall, "", call) })
	h.at(5*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(6*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(7*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("task %s: %s", res.Status, res.Reason)
	}
	var ids []string
	for _, o := range asked.Pending.Options {
		ids = append(ids, o.ID)
	}
	if strings.Join(ids, ",") != "allow_once,allow_tool,allow_repo,deny" {
		t.Errorf("the options of a destination's ask: %v", ids)
	}
	if c := h.toolCalls()[testTaskID+"-tc1"]; c.Decision != task.ToolAllow || c.Option != task.OptAllowRepo || c.By != "alice" {
		t.Errorf("the answered ask: %+v", c)
	}
	if c := again.out.(task.ToolCall); c.Decision != task.ToolAllow {
		t.Errorf("the destination asked again in the task: %+v", c)
	}
}
