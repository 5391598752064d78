package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestClaimsAgent: ACKs, messages and heartbeats reach the task with the
// token's name as the agent, never one from the body; an open API names
// nobody; a claimed refusal is 409 claimed with the holder in its message.
func TestClaimsAgent(t *testing.T) {
	h := newHarness(t, false)
	wantStatus(t, h.do(t, "POST", "/v1/acks", executorToken, `{"msg_id":"task_dispatch-T-2026-044-1740576727001"}`), http.StatusAccepted)
	wantStatus(t, h.do(t, "POST", "/v1/acks", executorToken, ackRecord), http.StatusAccepted)
	wantStatus(t, h.do(t, "POST", "/v1/heartbeats", executorToken, `{"task_id":"T-2026-044","from":"executor"}`), http.StatusAccepted)
	if strings.Join(h.tasks.agents, ",") != "codex,codex,codex" {
		t.Errorf("agents %q, want the token's name codex each time", h.tasks.agents)
	}

	open := newHarness(t, true)
	wantStatus(t, open.do(t, "POST", "/v1/acks", "", `{"msg_id":"task_dispatch-T-2026-044-1740576727001","as":"executor"}`), http.StatusAccepted)
	if len(open.tasks.agents) != 1 || open.tasks.agents[0] != "" {
		t.Errorf("open API agents %q, want nobody", open.tasks.agents)
	}

	h.tasks.err = task.Errorf(task.CodeClaimed, "claimed: codex-2 holds the executor's work on task T-2026-044")
	for _, c := range []struct{ path, body string }{
		{"/v1/acks", `{"msg_id":"task_dispatch-T-2026-044-1740576727001"}`},
		{"/v1/heartbeats", `{"task_id":"T-2026-044","from":"executor"}`},
	} {
		r := h.do(t, "POST", c.path, executorToken, c.body)
		wantStatus(t, r, http.StatusConflict)
		if e := r.errorBody(t); e.Code != task.CodeClaimed || !strings.Contains(e.Message, "codex-2") {
			t.Errorf("%s: error %+v, want claimed naming codex-2", c.path, e)
		}
	}
}

// TestResultWarningsAnswer: the 202 of a task_result carries the task's
// warnings.
func TestResultWarningsAnswer(t *testing.T) {
	h := newHarness(t, false)
	h.tasks.warnings = []string{"lines_added: claimed 1, git shows 3"}
	body := `{"type":"task_result","task_id":"T-2026-044","payload":{"subtask_id":"S1","completion_status":"complete",
 "diff_summary":{"files_changed":["a.go"],"lines_added":1,"lines_removed":0},"self_assessment":{"criteria_met":[true],"notes":[]},
 "work_log":[],"commit_hash":"3f2c1a9"}}`
	r := h.do(t, "POST", "/v1/messages", executorToken, body)
	wantStatus(t, r, http.StatusAccepted)
	var out SubmitResponse
	r.decode(t, &out)
	if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "lines_added") {
		t.Errorf("answer %s, want the warning", r.body)
	}
}

// TestInboxAcked: a message its holder ACKed is gone from everyone's
// inbox but the holder's with include=acked (or mine=true).
func TestInboxAcked(t *testing.T) {
	h := newHarness(t, false)
	waiting := dispatchMessage()
	held := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-045", testNow.Add(time.Second), &amp.TaskDispatch{Branch: "feature/y"})
	others := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-046", testNow.Add(2*time.Second), &amp.TaskDispatch{Branch: "feature/z"})
	h.store.setInbox([]amp.Message{waiting})
	for i, c := range []struct {
		m      amp.Message
		holder string
	}{{held, "codex"}, {others, "codex-2"}} {
		b, _ := json.Marshal(c.m)
		st := ssot.TaskState{TaskID: c.m.TaskID, Rev: 1, Status: string(task.StatusInProgress), StartedAt: testNow, UpdatedAt: testNow, State: json.RawMessage(`{}`),
			Outbox: []ssot.OutboxMessage{{MsgID: c.m.MsgID, TaskID: c.m.TaskID, Role: "executor", Type: string(c.m.Type), SentAt: testNow.Add(time.Duration(i+1) * time.Second),
				Body: b, Holder: c.holder, AckedAt: testNow.Add(time.Minute)}}}
		if _, err := h.store.Save(context.Background(), c.m.TaskID, nil, &st); err != nil {
			t.Fatal(err)
		}
	}
	read := func(q string) InboxResponse {
		t.Helper()
		r := h.do(t, "GET", "/v1/inbox"+q, executorToken, "")
		wantStatus(t, r, http.StatusOK)
		var out InboxResponse
		r.decode(t, &out)
		return out
	}
	ids := func(out InboxResponse) string {
		var s []string
		for _, m := range out.Messages {
			s = append(s, m.TaskID)
		}
		return strings.Join(s, ",")
	}
	if out := read(""); ids(out) != "T-2026-044" || len(out.Acked) != 0 {
		t.Errorf("inbox %s %+v, want only the message nobody holds", ids(out), out.Acked)
	}
	out := read("?include=acked")
	if ids(out) != "T-2026-044,T-2026-045" || len(out.Acked) != 1 || out.Acked[0].MsgID != held.MsgID || out.Acked[0].By != "codex" ||
		!out.Acked[0].At.Equal(testNow.Add(time.Minute)) {
		t.Errorf("include=acked: %s %+v, want the caller's own ACKed message too, marked", ids(out), out.Acked)
	}
	if out := read("?mine=true&wait=1s"); ids(out) != "T-2026-045" {
		t.Errorf("mine=true: %s, want the caller's ACKed message alone", ids(out))
	}
	for _, q := range []string{"?include=all", "?mine=yes"} {
		wantStatus(t, h.do(t, "GET", "/v1/inbox"+q, executorToken, ""), http.StatusBadRequest)
	}
	open := newHarness(t, true)
	r := open.do(t, "GET", "/v1/inbox?role=executor&mine=true", "", "")
	wantStatus(t, r, http.StatusBadRequest)
	if e := r.errorBody(t); !hasField(e.Fields, "mine") {
		t.Errorf("open mine=true: %+v, want mine named", e)
	}
}
