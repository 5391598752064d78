package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// toolCalls are the tool_call records of the task, by id, the outcome
// record overriding the first.
func (h *harness) toolCalls() map[string]task.ToolCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]task.ToolCall{}
	for _, r := range h.records {
		if string(r.Kind) != task.RecordToolCall {
			continue
		}
		var c task.ToolCall
		if err := json.Unmarshal(r.Body, &c); err != nil {
			h.t.Fatal(err)
		}
		out[c.ID] = c
	}
	return out
}

func TestToolCalls(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	call := func(tool, action, input string) task.ToolCall {
		return task.ToolCall{Agent: "exec", CLI: "claude", Tool: tool, Kind: "shell", Input: input, InputDigest: "d-" + input,
			CWD: "/w", Action: action, Rule: "r", Reason: "because", Risk: "medium", AskTimeout: 10 * time.Minute}
	}
	var deny, ask, again, other, expired *reply
	var asked, otherAsked, cleared task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { deny = h.update(task.UpdateToolCall, "", call("Bash", "deny", `{"command":"git push -f"}`)) })
	h.at(3*time.Second, func() { ask = h.update(task.UpdateToolCall, "", call("Bash", "ask", `{"command":"curl x"}`)) })
	h.at(4*time.Second, func() { other = h.update(task.UpdateToolCall, "", call("WebFetch", "ask", `{"url":"x"}`)) })
	h.at(5*time.Second, func() { asked = h.state(); h.decide("alice", task.OptAllowTool, "") })
	h.at(6*time.Second, func() { again = h.update(task.UpdateToolCall, "", call("Bash", "ask", `{"command":"wget y"}`)) })
	h.at(7*time.Second, func() { otherAsked = h.state() })
	// Nobody answers the WebFetch ask: it expires into deny after ten minutes.
	h.at(20*time.Minute-time.Second, func() { cleared = h.state() })
	h.at(20*time.Minute, func() { expired = h.update(task.UpdateToolCall, "", call("Write", "allow", `{}`)) })
	h.at(20*time.Minute+time.Second, func() { h.result(amp.StatusComplete) })
	h.at(20*time.Minute+2*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(20*time.Minute+3*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	res := h.run()
	if res.Status != task.StatusDone {
		t.Fatalf("task %s: %s", res.Status, res.Reason)
	}
	for _, r := range []*reply{deny, ask, other, again, expired} {
		accepted(t, r)
	}
	if c := deny.out.(task.ToolCall); c.Decision != task.ToolDeny || c.By != task.ByPolicy || c.ID != testTaskID+"-tc1" {
		t.Errorf("deny: %+v", c)
	}
	if c := ask.out.(task.ToolCall); c.Decision != task.ToolPending {
		t.Errorf("ask: %+v", c)
	}
	if asked.Pending == nil || asked.Pending.Kind != task.KindToolCall || asked.Pending.Required != 1 || len(asked.Pending.Options) != 3 {
		t.Fatalf("asked: %+v", asked.Pending)
	}
	// The open ask is what the task waits for; its turn is kept under it.
	if asked.Status != task.StatusAwaitingAdmin || asked.WaitingFor != task.KindToolCall || asked.UnderlyingStatus != task.StatusInProgress {
		t.Errorf("with an ask open: status %s, waiting for %q, underlying %q; want awaiting_admin, tool_call, in_progress",
			asked.Status, asked.WaitingFor, asked.UnderlyingStatus)
	}
	if cleared.Status != task.StatusInProgress || cleared.WaitingFor != "" || cleared.UnderlyingStatus != "" {
		t.Errorf("with no ask open: status %s, waiting for %q, underlying %q; want in_progress and nothing else",
			cleared.Status, cleared.WaitingFor, cleared.UnderlyingStatus)
	}
	if x := asked.Pending.Context.Extra; x["risk"] != "medium" || x["rule"] != "r" {
		t.Errorf("the ask's context does not carry the rule and its risk: %v", x)
	}
	if c := again.out.(task.ToolCall); c.Decision != task.ToolAllow || c.DecisionID != asked.Pending.ID {
		t.Errorf("the tool allowed for the rest of the task was asked again: %+v", c)
	}
	if otherAsked.Pending == nil || otherAsked.Pending.Kind != task.KindToolCall || otherAsked.Pending.ID == asked.Pending.ID {
		t.Errorf("the queued ask was not raised after the first: %+v", otherAsked.Pending)
	}
	calls := h.toolCalls()
	if len(calls) != 5 {
		t.Fatalf("%d tool calls recorded, want 5: %+v", len(calls), calls)
	}
	if c := calls[testTaskID+"-tc2"]; c.Decision != task.ToolAllow || c.By != "alice" || c.Option != task.OptAllowTool {
		t.Errorf("the approved ask: %+v", c)
	}
	if c := calls[testTaskID+"-tc3"]; c.Decision != task.ToolDeny || c.Channel != decision.ChannelExpiry {
		t.Errorf("the expired ask: %+v", c)
	}
}
