package activities

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

func TestTaskEvents(t *testing.T) {
	const id = "T-2026-007"
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	body := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	msg := func(typ amp.Type, from amp.Role, p amp.Payload) amp.Message {
		return amp.Message{MsgID: amp.MsgID(typ, id, at), ProtocolVersion: "1.0", Type: typ, From: from, To: amp.RoleCoordinator,
			TaskID: id, Timestamp: at.Format(time.RFC3339), Payload: p}
	}
	dispatch := msg(amp.TypeTaskDispatch, amp.RoleCoordinator, &amp.TaskDispatch{Description: "add CONTRIBUTING.md"})
	result := msg(amp.TypeTaskResult, amp.RoleExecutor, &amp.TaskResult{SubtaskID: "S1", CompletionStatus: amp.StatusComplete,
		DiffSummary: amp.DiffSummary{FilesChanged: []string{"CONTRIBUTING.md"}, LinesAdded: 12}})
	verdict := msg(amp.TypeReviewVerdict, amp.RoleReviewer, &amp.ReviewVerdict{Decision: amp.DecisionRejected, Issues: []amp.Issue{
		{Severity: amp.SeverityMajor, File: "src/auth.py", Line: 42, Description: "SQL injection", SuggestedFix: "parameterized queries"},
		{Severity: amp.SeverityMinor, File: "README.md", Line: 3, Description: "typo", SuggestedFix: "fix it"}}})
	esc := msg(amp.TypeEscalation, amp.RoleExecutor, &amp.Escalation{EscalationType: amp.EscHeartbeatTimeout, Severity: amp.SeverityWarning,
		TriggeredBy: amp.RoleExecutor, Description: "the test database is down"})
	entries := []RecordEntry{
		{ID: "plan-" + id, Kind: ssot.KindEvent, Body: body(task.Input{TaskID: id, Plan: amp.TaskDispatch{Description: "add CONTRIBUTING.md", RiskLevel: amp.RiskMedium}}), RecordedAt: at},
		{ID: dispatch.MsgID, Kind: ssot.KindMessage, Body: body(dispatch), RecordedAt: at},
		{ID: "ack-1", Kind: ssot.KindAck, Body: body(amp.NewAck(amp.RoleExecutor, dispatch, at)), RecordedAt: at},
		{ID: "ack-2", Kind: ssot.KindAck, Body: body(amp.NewAck(amp.RoleCoordinator, result, at)), RecordedAt: at},
		{ID: result.MsgID, Kind: ssot.KindMessage, Body: body(result), RecordedAt: at},
		{ID: verdict.MsgID, Kind: ssot.KindMessage, Body: body(verdict), RecordedAt: at},
		{ID: esc.MsgID, Kind: ssot.KindMessage, Body: body(esc), RecordedAt: at},
		{ID: "cancel-x", Kind: ssot.KindEvent, Body: body(map[string]string{"reason": "x"}), RecordedAt: at},
	}
	evs := TaskEvents(id, entries)
	var got []string
	for _, e := range evs {
		got = append(got, e.Type+"/"+e.Severity)
		if e.TaskID != id || e.From != ssot.MeshSender || !strings.HasPrefix(e.ID, ssot.SystemEventPrefix+"task-") {
			t.Errorf("event %+v", e)
		}
	}
	want := "[task.created/info task.claimed/info task.completed/info review.finding/error review.finding/warning task.blocked/warning]"
	if fmt.Sprint(got) != want {
		t.Fatalf("events %v, want %s", got, want)
	}
	for i, fields := range [][]string{
		{`"goal":"add CONTRIBUTING.md"`, `"priority":2`, `"assignee":"executor"`},
		{`"agent_id":"executor"`, `"lease_ttl":0`},
		{`"result_summary":"complete: 1 files, +12 -0"`},
		{`"file_path":"src/auth.py"`, `"line_number":42`, `"message":"SQL injection"`, `"suggestion":"parameterized queries"`},
		{`"file_path":"README.md"`},
		{`"blocked_reason":"the test database is down"`},
	} {
		for _, f := range fields {
			if !strings.Contains(string(evs[i].Payload), f) {
				t.Errorf("%s payload %s lacks %s", evs[i].Type, evs[i].Payload, f)
			}
		}
	}
	// Recording the batch again gives the same ids: the store keeps each once.
	again := TaskEvents(id, entries)
	for i := range evs {
		if again[i].ID != evs[i].ID {
			t.Fatalf("ids differ on a retry: %s, %s", evs[i].ID, again[i].ID)
		}
	}
}
