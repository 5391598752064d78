package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp/task"
)

func TestHeartbeatNoteTooLong(t *testing.T) {
	h := newHarness(t, false)
	note := strings.Repeat("n", task.MaxHeartbeatNote+1)
	r := h.do(t, "POST", "/v1/heartbeats", executorToken, `{"task_id":"T-2026-044","from":"executor","note":"`+note+`"}`)
	wantStatus(t, r, http.StatusBadRequest)
	if e := r.errorBody(t); !hasField(e.Fields, "note") {
		t.Errorf("error %+v does not name note", e)
	}
	if n := h.tasks.callCount(); n != 0 {
		t.Errorf("a refused heartbeat reached the task: %v", h.tasks.calls)
	}
	note = strings.Repeat("n", task.MaxHeartbeatNote)
	wantStatus(t, h.do(t, "POST", "/v1/heartbeats", executorToken, `{"task_id":"T-2026-044","from":"executor","note":"`+note+`"}`), http.StatusAccepted)
}

// A task refusing an escalation as rate limited answers 429, and the
// refusal is kept in the error log.
func TestRateLimitedIs429(t *testing.T) {
	h := newHarness(t, false)
	h.tasks.err = task.Errorf(task.CodeRateLimited, "escalation refused: at most 20")
	r := h.do(t, "POST", "/v1/messages", executorToken, taskResult)
	wantStatus(t, r, http.StatusTooManyRequests)
	if e := r.errorBody(t); e.Code != task.CodeRateLimited {
		t.Errorf("error %+v", e)
	}
	if log := h.store.errorLog(); len(log) != 1 || !strings.Contains(log[0].Reason, "rate_limited") {
		t.Errorf("error log %+v, want the refusal", log)
	}
}
