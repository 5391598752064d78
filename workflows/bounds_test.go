package workflows

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// escalationMsg is an executor's warning escalation at the current
// virtual time.
func (h *harness) escalationMsg(description string, actions ...string) amp.Message {
	return amp.NewMessage(amp.RoleExecutor, amp.RoleAdmin, testTaskID, h.env.Now(), &amp.Escalation{
		EscalationType: amp.EscConflict, Severity: amp.SeverityWarning, TriggeredBy: amp.RoleExecutor,
		Description: description, AffectedMsgs: []string{}, SuggestedActions: actions,
		SystemStateSnapshot: map[string]any{"task_status": "in_progress"}})
}

func (h *harness) cancelTask(by string) *reply {
	return h.update(task.UpdateCancel, "", task.CancelInput{Reason: "test over", By: by})
}

func TestAgentEscalationRateLimit(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	var first []*reply
	for i := range MaxAgentEscalations {
		h.at(time.Duration(2+i)*time.Second, func() {
			m := h.escalationMsg("blocked on a flaky simulator")
			first = append(first, h.submit(m, m.MsgID))
		})
	}
	var over, overLater, afterHour *reply
	h.at(30*time.Second, func() { m := h.escalationMsg("one more"); over = h.submit(m, m.MsgID) })
	h.at(50*time.Minute, func() { m := h.escalationMsg("still"); overLater = h.submit(m, m.MsgID) })
	// The first escalation, at 2s, has left the window an hour later.
	h.at(time.Hour+3*time.Second, func() { m := h.escalationMsg("after the hour"); afterHour = h.submit(m, m.MsgID) })
	var st task.State
	h.at(time.Hour+4*time.Second, func() { st = h.state(); h.cancelTask("planner") })
	h.run()

	for _, r := range first {
		accepted(t, r)
	}
	for name, r := range map[string]*reply{"21st": over, "21st, 50 minutes on": overLater} {
		refused(t, r, task.CodeRateLimited)
		var app *temporal.ApplicationError
		if errors.As(r.err, &app) && !strings.Contains(app.Message(), "at most 20") {
			t.Errorf("%s: message %q does not say the bound", name, app.Message())
		}
	}
	accepted(t, afterHour)
	n := 0
	for _, m := range h.recordedMessages(amp.TypeEscalation) {
		if m.From == amp.RoleExecutor {
			n++
		}
	}
	if n != MaxAgentEscalations+1 {
		t.Errorf("%d escalations recorded, want %d: refused ones leave no trace in the SSOT", n, MaxAgentEscalations+1)
	}
	if st.Status.Terminal() {
		t.Errorf("the task ended early: %s", st.Status)
	}
}

func TestAgentEscalationFieldBounds(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	long := strings.Repeat("x", MaxEscalationText+1)
	edge := strings.Repeat("y", MaxEscalationText)
	var desc, action, ok *reply
	h.at(time.Second, func() { m := h.escalationMsg(long); desc = h.submit(m, m.MsgID) })
	h.at(2*time.Second, func() { m := h.escalationMsg("short", "fine", long); action = h.submit(m, m.MsgID) })
	h.at(3*time.Second, func() { m := h.escalationMsg(edge, edge); ok = h.submit(m, m.MsgID) })
	h.at(4*time.Second, func() { h.cancelTask("planner") })
	h.run()

	for field, r := range map[string]*reply{"payload.description": desc, "payload.suggested_actions[1]": action} {
		refused(t, r, task.CodeInvalid)
		if r.err == nil || !strings.Contains(r.err.Error(), field+": ") {
			t.Errorf("refusal %v does not name %s", r.err, field)
		}
	}
	accepted(t, ok)
}

// A heartbeat signal bypasses the clients' check; the workflow keeps at
// most MaxHeartbeatNote of its note.
func TestHeartbeatNoteBound(t *testing.T) {
	if err := (task.HeartbeatInput{Note: strings.Repeat("n", task.MaxHeartbeatNote)}).Validate(); err != nil {
		t.Errorf("a note of exactly the bound: %v", err)
	}
	err := (task.HeartbeatInput{Note: strings.Repeat("n", task.MaxHeartbeatNote+1)}).Validate()
	var te *task.Error
	if !errors.As(err, &te) || te.Code != task.CodeInvalid || len(te.Fields) != 1 || te.Fields[0].Path != "note" {
		t.Errorf("a note over the bound: %v", err)
	}

	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() {
		h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Note: strings.Repeat("é", task.MaxHeartbeatNote)})
	})
	var st task.State
	h.at(3*time.Second, func() { st = h.state(); h.cancelTask("planner") })
	h.run()
	var note string
	for _, e := range st.Timeline {
		if e.Kind == "heartbeat" {
			note = e.Note
		}
	}
	if len(note) == 0 || len(note) > task.MaxHeartbeatNote || !strings.HasPrefix(strings.Repeat("é", task.MaxHeartbeatNote), note) {
		t.Errorf("heartbeat note of %d bytes kept, want at most %d whole characters", len(note), task.MaxHeartbeatNote)
	}
}

// The client refuses a long note before it reaches Temporal, for the CLI
// and the API alike.
func TestClientHeartbeatNoteBound(t *testing.T) {
	err := (&Client{}).Heartbeat(t.Context(), testTaskID, task.HeartbeatInput{From: amp.RoleExecutor, Note: strings.Repeat("n", task.MaxHeartbeatNote+1)})
	var te *task.Error
	if !errors.As(err, &te) || te.Code != task.CodeInvalid || !strings.HasPrefix(te.Message, "note: ") {
		t.Errorf("Heartbeat with a long note: %v", err)
	}
}

// TestTaskInputBudget: a task takes MaxTaskSubmissions messages and ACKs
// over its life (a resent one counts: it is in the history too); the next
// is refused with input_budget_spent and leaves nothing. Heartbeats past
// MaxTaskHeartbeats are ignored.
func TestTaskInputBudget(t *testing.T) {
	defer func(s, b int) { maxTaskSubmissions, maxTaskHeartbeats = s, b }(maxTaskSubmissions, maxTaskHeartbeats)
	maxTaskSubmissions, maxTaskHeartbeats = 5, 3
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var ack amp.Ack
	var first, last, over *reply
	h.at(time.Second, func() {
		m := h.outboxTo(amp.RoleExecutor)
		ack = amp.NewAck(amp.RoleExecutor, m, h.env.Now())
		first = h.submit(ack, ack.MsgID)
	})
	h.at(2*time.Second, func() {
		for i := 1; i < maxTaskSubmissions; i++ {
			last = h.submit(ack, fmt.Sprintf("%s-%d", ack.MsgID, i))
		}
	})
	h.at(3*time.Second, func() { over = h.submit(ack, ack.MsgID+"-over") })
	h.at(4*time.Second, func() {
		for i := range maxTaskHeartbeats + 2 {
			h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Note: fmt.Sprint("beat ", i)})
		}
	})
	var st task.State
	h.at(5*time.Second, func() { st = h.state(); h.cancelTask("planner") })
	h.run()

	accepted(t, first)
	accepted(t, last)
	refused(t, over, task.CodeInputBudget)
	if st.Status.Terminal() {
		t.Errorf("the task ended early: %s", st.Status)
	}
	for _, e := range st.Timeline {
		if e.Kind == "heartbeat" && e.Note != fmt.Sprint("beat ", maxTaskHeartbeats-1) {
			t.Errorf("the last heartbeat taken says %q, want the last within the budget", e.Note)
		}
	}
}

// An account's note is a timeline entry of its own: the heartbeats after
// it do not overwrite it.
func TestAccountNoteKept(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	const note = "account a of the executor rests until 14:05 UTC (usage limit); the run goes on at once with account b"
	for i, in := range []task.HeartbeatInput{
		{From: amp.RoleExecutor, Note: "session"},
		{From: amp.RoleExecutor, Note: note, Account: true},
		{From: amp.RoleExecutor, Note: "exec_command ls"},
		{From: amp.RoleExecutor, Note: "exec_command git commit"},
	} {
		h.at(time.Duration(2+i)*time.Second, func() { h.env.SignalWorkflow(task.SignalHeartbeat, in) })
	}
	var st task.State
	h.at(10*time.Second, func() { st = h.state(); h.cancelTask("planner") })
	h.run()
	var kinds []string
	for _, e := range st.Timeline {
		if e.Kind == "account" && e.Note != note {
			t.Errorf("account entry %q, want %q", e.Note, note)
		}
		if e.Kind == "account" || e.Kind == "heartbeat" {
			kinds = append(kinds, e.Kind)
		}
	}
	if strings.Join(kinds, " ") != "heartbeat account heartbeat" {
		t.Errorf("timeline kinds %q, want heartbeat account heartbeat", kinds)
	}
}
