package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// payloadOf returns the payload of a whole envelope given as JSON.
func payloadOf(t *testing.T, envelope string) json.RawMessage {
	t.Helper()
	var m struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal([]byte(envelope), &m); err != nil {
		t.Fatal(err)
	}
	return m.Payload
}

func shortForm(typ, taskID, from string, payload json.RawMessage) string {
	if from != "" {
		return fmt.Sprintf(`{"type":%q,"task_id":%q,"from":%q,"payload":%s}`, typ, taskID, from, payload)
	}
	return fmt.Sprintf(`{"type":%q,"task_id":%q,"payload":%s}`, typ, taskID, payload)
}

func TestPostMessageShortForm(t *testing.T) {
	escalation := json.RawMessage(`{"escalation_type":"permission_denied","severity":"warning","triggered_by":"executor",
		"description":"the build needs a secret","affected_msgs":[],"system_state_snapshot":{},"auto_suspended":false}`)
	for _, tc := range []struct {
		name, token, typ, from string
		payload                json.RawMessage
		wantFrom, wantTo       amp.Role
	}{
		{"TaskResult", executorToken, "task_result", "", payloadOf(t, taskResult), amp.RoleExecutor, amp.RoleCoordinator},
		{"ReviewVerdict", reviewerToken, "review_verdict", "", payloadOf(t, reviewVerdict), amp.RoleReviewer, amp.RoleCoordinator},
		{"EscalationFromToken", executorToken, "escalation", "", escalation, amp.RoleExecutor, amp.RoleAdmin},
		{"EscalationFrom", reviewerToken, "escalation", "reviewer", escalation, amp.RoleReviewer, amp.RoleAdmin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, false)
			r := h.do(t, "POST", "/v1/messages", tc.token, shortForm(tc.typ, "T-2026-044", tc.from, tc.payload))
			wantStatus(t, r, http.StatusAccepted)
			if len(h.tasks.submitted) != 1 {
				t.Fatalf("submitted %d records, want 1", len(h.tasks.submitted))
			}
			m, err := amp.Parse(h.tasks.submitted[0])
			if err != nil {
				t.Fatalf("the built envelope does not parse: %v", err)
			}
			wantID := fmt.Sprintf("%s-T-2026-044-%d", tc.typ, testNow.UnixMilli())
			if m.MsgID != wantID || m.From != tc.wantFrom || m.To != tc.wantTo || m.TaskID != "T-2026-044" ||
				m.Timestamp != testNow.Format(amp.TimestampLayout) || string(m.Type) != tc.typ {
				t.Errorf("built envelope %+v, want msg_id %s from %s to %s", m, wantID, tc.wantFrom, tc.wantTo)
			}
			var out SubmitResponse
			r.decode(t, &out)
			if out.MsgID != wantID {
				t.Errorf("answer msg_id %s, want %s", out.MsgID, wantID)
			}
		})
	}
}

func TestPostMessageShortFormInvalid(t *testing.T) {
	result := payloadOf(t, taskResult)
	bad := json.RawMessage(`{"subtask_id":"S1","completion_status":"mostly"}`)
	for _, tc := range []struct {
		name, token, body, field string
		open                     bool
		status                   int
	}{
		{"NoType", executorToken, fmt.Sprintf(`{"task_id":"T-2026-044","payload":%s}`, result), "type", false, 400},
		{"OtherType", executorToken, shortForm("task_dispatch", "T-2026-044", "", result), "type", false, 400},
		{"BadTaskID", executorToken, shortForm("task_result", "T-44", "", result), "task_id", false, 400},
		{"NoPayload", executorToken, `{"type":"task_result","task_id":"T-2026-044"}`, "payload", false, 400},
		{"BadPayload", executorToken, shortForm("task_result", "T-2026-044", "", bad), "payload.completion_status", false, 400},
		{"UnknownField", executorToken, fmt.Sprintf(`{"type":"task_result","task_id":"T-2026-044","payload":%s,"to":"admin"}`, result), "to", false, 400},
		{"FromOnResult", executorToken, shortForm("task_result", "T-2026-044", "executor", result), "from", false, 400},
		{"EscalationNoFromOpen", "", shortForm("escalation", "T-2026-044", "", json.RawMessage(`{}`)), "from", true, 400},
		{"WrongRole", executorToken, shortForm("review_verdict", "T-2026-044", "", payloadOf(t, reviewVerdict)), "", false, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.open)
			r := h.do(t, "POST", "/v1/messages", tc.token, tc.body)
			wantStatus(t, r, tc.status)
			e := r.errorBody(t)
			if tc.field != "" && (e.Code != task.CodeInvalid || !hasField(e.Fields, tc.field)) {
				t.Errorf("error %+v does not name %s", e, tc.field)
			}
			if h.tasks.callCount() != 0 {
				t.Errorf("a refused short form reached the tasks: %v", h.tasks.calls)
			}
			if n := len(h.store.errorLog()); n != 1 {
				t.Errorf("error log has %d entries, want 1", n)
			}
		})
	}
}
