package e2e

import (
	"strings"
	"testing"
)

// aofErrors covers the document's error tables: each rejection answers
// with its reason, is logged as the document's event, and changes
// nothing.
func aofErrors(t *testing.T, c aofClient) {
	const (
		t57, t59, t61 = "TASK-2026-02-09-057", "TASK-2026-02-09-059", "TASK-2026-02-09-061"
		t65, t66      = "TASK-2026-02-09-065", "TASK-2026-02-09-066"
	)
	c.create(t65, nil)
	cases := []struct {
		name   string
		body   []byte
		status int
		code   string
		task   string
		event  string
		reason string
	}{
		{"InvalidJSON", []byte(`{"protocol": "aof", `), 400, "invalid_json", "", "protocol.message.rejected", "invalid_json"},
		{"InvalidJSONContent", wrapContent(t, "AOF/1 {oops"), 400, "invalid_json", "", "protocol.message.rejected", "invalid_json"},
		{"InvalidEnvelope", aofExample(t, "3", map[string]any{"version": 2}), 400, "invalid_envelope", t59, "protocol.message.rejected", "invalid_envelope"},
		{"InvalidOutcome", aofExample(t, "1", map[string]any{"payload.outcome": "finished"}), 400, "invalid_envelope", t57, "protocol.message.rejected", "invalid_envelope"},
		{"EmptyStatusUpdate", aofExample(t, "3", map[string]any{"payload.progress": nil, "payload.notes": nil}), 400, "invalid_envelope", t59, "protocol.message.rejected", "invalid_envelope"},
		{"UnknownType", aofExample(t, "3", map[string]any{"type": "task.cancel"}), 400, "unknown_type", t59, "protocol.message.unknown", ""},
		{"TaskNotFound", aofExample(t, "1", map[string]any{"taskId": t66}), 404, "task_not_found", t66, "protocol.message.rejected", "task_not_found"},
		{"HandoffTaskNotFound", aofExample(t, "6", map[string]any{"taskId": t66, "payload.taskId": t66}), 404, "task_not_found", t66, "delegation.rejected", "task_not_found"},
		{"TaskIDMismatch", aofExample(t, "5", map[string]any{"payload.taskId": t66}), 400, "taskId_mismatch", t61, "protocol.message.rejected", "taskId_mismatch"},
		{"ParentNotFound", aofExample(t, "5", map[string]any{"taskId": t65, "payload.taskId": t65, "payload.parentTaskId": t66}), 404, "parent_not_found", t65, "delegation.rejected", "parent_not_found"},
		{"NestedDelegation", aofExample(t, "5", map[string]any{"taskId": t65, "payload.taskId": t65, "payload.parentTaskId": t61}), 409, "nested_delegation", t65, "delegation.rejected", "nested_delegation"},
	}
	for _, tc := range cases {
		t.Run("Error"+tc.name, func(t *testing.T) {
			c := c.on(t)
			var before aofTaskView
			if tc.task != "" && tc.task != t66 {
				before = c.task(tc.task)
			}
			code, out := c.send(tc.body)
			e, _ := out["error"].(map[string]any)
			if code != tc.status || e["code"] != tc.code {
				t.Errorf("answered %d %v, want %d %s", code, out, tc.status, tc.code)
			}
			ev := c.lastEvent(tc.task, tc.event)
			if tc.reason != "" {
				wantReason(t, ev, tc.reason)
			} else if ev.Payload["type"] != "task.cancel" {
				t.Errorf("unknown event payload %v", ev.Payload)
			}
			if tc.task != "" && tc.task != t66 {
				after := c.task(tc.task)
				if after.Status != before.Status || len(after.WorkLog) != len(before.WorkLog) || after.ParentTaskID != before.ParentTaskID {
					t.Errorf("a rejection changed %s: %+v → %+v", tc.task, before, after)
				}
			}
		})
	}
	t.Run("ErrorInvalidTransitionAppendsWorkLog", func(t *testing.T) {
		c := c.on(t)
		code, out := c.send(aofExample(t, "3", map[string]any{"payload.status": "backlog"}))
		if code != 200 || !strings.Contains(out["note"].(string), "not a valid transition") {
			t.Errorf("%d %v", code, out)
		}
		if v := c.task(t59); v.Status != "in_progress" || len(v.WorkLog) != 2 {
			t.Errorf("status %s work log %q", v.Status, v.WorkLog)
		}
	})
	t.Run("ErrorInvalidCriteriaProceeds", func(t *testing.T) {
		c := c.on(t)
		const t67 = "TASK-2026-02-09-067"
		c.create(t67, nil)
		c.must(aofExample(t, "5", map[string]any{"taskId": t67, "payload.taskId": t67, "payload.acceptanceCriteria": "all of them"}))
		var hj struct {
			AcceptanceCriteria []string `json:"acceptanceCriteria"`
		}
		c.artifact(t67, "inputs/handoff.json", &hj)
		if hj.AcceptanceCriteria == nil || len(hj.AcceptanceCriteria) != 0 || c.task(t67).Metadata.DelegationDepth != 1 {
			t.Errorf("handoff.json criteria %v", hj.AcceptanceCriteria)
		}
		if w, _ := c.lastEvent(t67, "protocol.message.received").Payload["warnings"].([]any); len(w) != 1 {
			t.Errorf("the schema error is not logged with the message: %v", w)
		}
		c.lastEvent(t67, "delegation.requested")
	})
	t.Run("ErrorCompletionWhileDone", func(t *testing.T) {
		c := c.on(t)
		n := c.countEvents(t57, "task.completed")
		code, out := c.send(aofExample(t, "1", nil))
		if code != 200 || out["changed"] != false {
			t.Errorf("%d %v", code, out)
		}
		if c.task(t57).Status != "done" || c.countEvents(t57, "task.completed") != n {
			t.Error("a report to a done task changed it")
		}
	})
	t.Run("ErrorDispatchNotReady", func(t *testing.T) {
		c := c.on(t)
		code, resp := c.call("POST", "/v1/aof/tasks/"+t59+"/dispatch", map[string]any{"agentId": "swe-qa"}, nil)
		if code != 409 || !strings.Contains(string(resp), "invalid_transition") {
			t.Errorf("%d %s", code, resp)
		}
		code, resp = c.call("POST", "/v1/aof/tasks/"+t65+"/heartbeat", map[string]any{"agentId": "swe-qa"}, nil)
		if code != 409 || !strings.Contains(string(resp), "not_running") {
			t.Errorf("%d %s", code, resp)
		}
	})
}
