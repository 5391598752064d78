package e2e

import (
	"strings"
	"testing"
)

// aofErrors covers the document's error tables: each rejection answers
// with its reason, is logged as the document's event, and changes
// nothing.
func aofErrors(t *testing.T, c *apiClient) {
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
		{"StatusUpdateTaskNotFound", aofExample(t, "3", map[string]any{"taskId": t66, "payload.taskId": t66}), 404, "task_not_found", t66, "protocol.message.rejected", "task_not_found"},
		{"HandoffRequestTaskNotFound", aofExample(t, "5", map[string]any{"taskId": t66, "payload.taskId": t66}), 404, "task_not_found", t66, "protocol.message.rejected", "task_not_found"},
		{"HandoffRequestTaskNotFoundDelegation", aofExample(t, "5", map[string]any{"taskId": t66, "payload.taskId": t66}), 404, "task_not_found", t66, "delegation.rejected", "task_not_found"},
		{"CompletionNotRunning", aofExample(t, "1", map[string]any{"taskId": t65}), 409, "not_running", t65, "protocol.message.rejected", "not_running"},
		{"SelfParent", aofExample(t, "5", map[string]any{"taskId": t65, "payload.taskId": t65, "payload.parentTaskId": t65}), 400, "invalid_envelope", t65, "protocol.message.rejected", "invalid_envelope"},
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
	t.Run("ErrorReparent", func(t *testing.T) {
		c := c.on(t)
		// t61 is t57's child (example 5): handed off from t65 it is
		// refused, and stays t57's.
		code, out := c.send(aofExample(t, "5", map[string]any{"payload.parentTaskId": t65}))
		if e, _ := out["error"].(map[string]any); code != 409 || e["code"] != "parent_conflict" {
			t.Errorf("%d %v", code, out)
		}
		wantReason(t, c.lastEvent(t61, "delegation.rejected"), "parent_conflict")
		if v := c.task(t61); v.ParentTaskID != t57 {
			t.Errorf("parent %s", v.ParentTaskID)
		}
	})
	t.Run("ErrorNestedAtCreate", func(t *testing.T) {
		c := c.on(t)
		const t68 = "TASK-2026-02-09-068"
		code, resp := c.call("POST", "/v1/aof/tasks", map[string]any{"taskId": t68, "title": "grandchild", "parentTaskId": t61}, nil)
		if code != 409 || !strings.Contains(string(resp), "nested_delegation") {
			t.Errorf("%d %s", code, resp)
		}
		wantReason(t, c.lastEvent(t68, "delegation.rejected"), "nested_delegation")
	})
	// The Resume Protocol's error table.
	t.Run("ResumeMissingRunArtifacts", func(t *testing.T) {
		// t59 runs with no run_result.json: the session's end passes it
		// by, and it stays resumable.
		c := c.on(t)
		c.sessionEnd()
		if v := c.task(t59); v.Status != "in_progress" {
			t.Errorf("status %s", v.Status)
		}
		if _, ok := c.task(t59).Artifacts["run_result.json"]; ok {
			t.Error("a run_result.json appeared")
		}
	})
	t.Run("ResumeHeartbeatMissing", func(t *testing.T) {
		// This row cannot happen here: a task is in_progress only by a
		// dispatch, which writes run_heartbeat.json; an agent's status
		// update to in_progress appends the work log instead.
		c := c.on(t)
		before := c.task(t65)
		code, out := c.send(aofExample(t, "3", map[string]any{"taskId": t65, "payload.taskId": t65, "payload.status": "in_progress"}))
		if code != 200 || !strings.Contains(out["note"].(string), "dispatch") {
			t.Errorf("%d %v", code, out)
		}
		after := c.task(t65)
		if _, ok := after.Artifacts["run_heartbeat.json"]; after.Status != "ready" || ok || len(after.WorkLog) != len(before.WorkLog)+1 {
			t.Errorf("status %s work log %q", after.Status, after.WorkLog)
		}
	})
	t.Run("ResumeInvalidRunResult", func(t *testing.T) {
		// run_result.json is written only from a valid report: an invalid
		// one is rejected (protocol.message.rejected) and the session's
		// end moves nothing.
		c := c.on(t)
		code, _ := c.send(aofExample(t, "1", map[string]any{"taskId": t59, "payload.outcome": "finished"}))
		if code != 400 {
			t.Errorf("answered %d", code)
		}
		wantReason(t, c.lastEvent(t59, "protocol.message.rejected"), "invalid_envelope")
		c.sessionEnd()
		if v := c.task(t59); v.Status != "in_progress" {
			t.Errorf("status %s", v.Status)
		} else if _, ok := v.Artifacts["run_result.json"]; ok {
			t.Error("an invalid report wrote run_result.json")
		}
	})
	t.Run("ResumeAlreadyTransitioned", func(t *testing.T) {
		// t58 moved to blocked at its session's end: another end, and the
		// same report again, change nothing.
		c := c.on(t)
		const t58 = "TASK-2026-02-09-058"
		n := c.countEvents(t58, "task.transitioned")
		c.sessionEnd()
		code, out := c.send(wrapContent(t, string(aofExample(t, "2", nil))))
		if code != 200 || out["changed"] != false {
			t.Errorf("%d %v", code, out)
		}
		if v := c.task(t58); v.Status != "blocked" || c.countEvents(t58, "task.transitioned") != n {
			t.Errorf("status %s, %d transitions (had %d)", v.Status, c.countEvents(t58, "task.transitioned"), n)
		}
	})
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
