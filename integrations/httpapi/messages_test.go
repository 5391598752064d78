package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

func TestPostMessage(t *testing.T) {
	h := newHarness(t, false)
	r := h.do(t, "POST", "/v1/messages", executorToken, taskResult)
	wantStatus(t, r, http.StatusAccepted)
	var out SubmitResponse
	r.decode(t, &out)
	if out.MsgID != "task_result-T-2026-044-1740581280000" || out.Status != task.StatusInReview || out.Duplicate {
		t.Errorf("answer %+v", out)
	}
	if string(h.tasks.submitted[0]) != taskResult {
		t.Errorf("submitted %s, want the body unchanged", h.tasks.submitted[0])
	}
	if !strings.Contains(string(r.body), `"duplicate":false`) {
		t.Errorf("answer %s does not say duplicate:false", r.body)
	}

	r = h.do(t, "POST", "/v1/messages", reviewerToken, reviewVerdict)
	wantStatus(t, r, http.StatusAccepted)
	if len(h.store.errorLog()) != 0 {
		t.Errorf("accepted messages reached the error log: %+v", h.store.errorLog())
	}
}

func TestPostMessageInvalid(t *testing.T) {
	h := newHarness(t, false)
	bad := strings.Replace(taskResult, `"completion_status": "complete"`, `"completion_status": "mostly"`, 1)
	bad = strings.Replace(bad, `"to": "coordinator"`, `"to": "coordinator", "cc": "admin"`, 1)
	r := h.do(t, "POST", "/v1/messages", executorToken, bad)
	wantStatus(t, r, http.StatusBadRequest)
	e := r.errorBody(t)
	if e.Code != task.CodeInvalid || !hasField(e.Fields, "payload.completion_status") || !hasField(e.Fields, "cc") {
		t.Errorf("error %+v does not name payload.completion_status and cc", e)
	}
	if h.tasks.callCount() != 0 {
		t.Errorf("an invalid message reached the tasks: %v", h.tasks.calls)
	}
	log := h.store.errorLog()
	if len(log) != 1 {
		t.Fatalf("error log has %d entries, want 1", len(log))
	}
	if log[0].Raw != bad || !strings.Contains(log[0].Reason, "(from 127.0.0.1:") || log[0].Source != "http" ||
		!strings.Contains(log[0].Reason, "payload.completion_status") || !log[0].RecordedAt.Equal(testNow) {
		t.Errorf("error log entry %+v", log[0])
	}

	r = h.do(t, "POST", "/v1/messages", executorToken, `{"msg_id": `)
	wantStatus(t, r, http.StatusBadRequest)
	if e := r.errorBody(t); !hasField(e.Fields, amp.RootPath) {
		t.Errorf("malformed JSON: fields %+v do not name the root", e.Fields)
	}
	if n := len(h.store.errorLog()); n != 2 {
		t.Errorf("error log has %d entries after malformed JSON, want 2", n)
	}
}

func TestPostMessageRefusedByTask(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    *task.Error
		status int
	}{
		{"NotFound", &task.Error{Code: task.CodeNotFound, Message: "no such task"}, http.StatusNotFound},
		{"Unexpected", task.Errorf(task.CodeUnexpected, "task_result is not expected in awaiting_approval"), http.StatusConflict},
		{"Suspended", task.Errorf(task.CodeSuspended, "task T-2026-044 is suspended"), http.StatusLocked},
		{"Conflict", task.Errorf(task.CodeConflict, "msg_id reused"), http.StatusConflict},
		{"Finished", task.Errorf(task.CodeFinished, "task is done"), http.StatusConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, false)
			h.tasks.err = tc.err
			r := h.do(t, "POST", "/v1/messages", executorToken, taskResult)
			wantStatus(t, r, tc.status)
			e := r.errorBody(t)
			if e.Code != tc.err.Code || e.Message != tc.err.Message {
				t.Errorf("error %+v, want %s %q", e, tc.err.Code, tc.err.Message)
			}
			log := h.store.errorLog()
			if len(log) != 1 || log[0].Raw != taskResult || !strings.Contains(log[0].Reason, string(tc.err.Code)) {
				t.Errorf("error log %+v, want the refused message with its code", log)
			}
		})
	}
	t.Run("Unavailable", func(t *testing.T) {
		h := newHarness(t, false)
		h.tasks.err = task.Errorf(task.CodeUnavailable, "no worker")
		r := h.do(t, "POST", "/v1/messages", executorToken, taskResult)
		wantStatus(t, r, http.StatusServiceUnavailable)
		if n := len(h.store.errorLog()); n != 0 {
			t.Errorf("an outage put %d entries in the error log; the message was not at fault", n)
		}
	})
}

func TestPostMessageWrongRole(t *testing.T) {
	h := newHarness(t, false)
	r := h.do(t, "POST", "/v1/messages", executorToken, reviewVerdict)
	wantStatus(t, r, http.StatusForbidden)
	if e := r.errorBody(t); e.Code != task.CodeForbidden {
		t.Errorf("error %+v", e)
	}
	if h.tasks.callCount() != 0 {
		t.Errorf("a forbidden message reached the tasks: %v", h.tasks.calls)
	}
	log := h.store.errorLog()
	if len(log) != 1 || log[0].Raw != reviewVerdict || !strings.Contains(log[0].Reason, "forbidden") {
		t.Errorf("error log %+v, want the forbidden verdict", log)
	}
}

func TestBodyTooLarge(t *testing.T) {
	h := newHarness(t, false)
	big := `{"msg_id":"` + strings.Repeat("x", DefaultMaxBody) + `"}`
	r := h.do(t, "POST", "/v1/messages", executorToken, big)
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
	if e := r.errorBody(t); e.Code != codeTooLarge {
		t.Errorf("error %+v", e)
	}
	if h.tasks.callCount() != 0 {
		t.Errorf("a too large body reached the tasks")
	}
	if log := h.store.errorLog(); len(log) != 1 || len(log[0].Raw) > DefaultMaxBody {
		t.Errorf("error log has %d entries (want 1, raw cut at the limit)", len(log))
	}
}

func TestPostAck(t *testing.T) {
	t.Run("Record", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/acks", executorToken, ackRecord)
		wantStatus(t, r, http.StatusAccepted)
		if len(h.tasks.submitted) != 1 || string(h.tasks.submitted[0]) != ackRecord {
			t.Errorf("submitted %q", h.tasks.submitted)
		}
	})
	t.Run("RecordOfAnotherRole", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/acks", reviewerToken, ackRecord)
		wantStatus(t, r, http.StatusForbidden)
		if len(h.store.errorLog()) != 1 {
			t.Errorf("the forbidden ACK is not in the error log")
		}
	})
	t.Run("ShortForm", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/acks", executorToken, `{"msg_id":"task_dispatch-T-2026-044-1740576727001"}`)
		wantStatus(t, r, http.StatusAccepted)
		var out SubmitResponse
		r.decode(t, &out)
		if h.tasks.acked[0] != "task_dispatch-T-2026-044-1740576727001 as executor" || out.Status != task.StatusInProgress {
			t.Errorf("acked %v, answer %+v", h.tasks.acked, out)
		}
	})
	t.Run("ShortFormAsOtherRole", func(t *testing.T) {
		h := newHarness(t, false)
		body := `{"msg_id":"review_request-T-2026-044-1740581400000","as":"reviewer"}`
		r := h.do(t, "POST", "/v1/acks", executorToken, body)
		wantStatus(t, r, http.StatusForbidden)
		if log := h.store.errorLog(); len(log) != 1 || log[0].Raw != body {
			t.Errorf("error log %+v", log)
		}
	})
	t.Run("ShortFormUnknownField", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/acks", executorToken, `{"msg_id":"x","by":"me"}`)
		wantStatus(t, r, http.StatusBadRequest)
		if e := r.errorBody(t); !hasField(e.Fields, "by") {
			t.Errorf("fields %+v do not name by", e.Fields)
		}
		if len(h.store.errorLog()) != 1 {
			t.Errorf("the refused ACK is not in the error log")
		}
	})
	t.Run("NothingAwaits", func(t *testing.T) {
		h := newHarness(t, false)
		h.tasks.err = task.Errorf(task.CodeUnexpected, "no message awaits an ACK")
		r := h.do(t, "POST", "/v1/acks", executorToken, `{"msg_id":"task_dispatch-T-2026-044-1740576727001","as":"executor"}`)
		wantStatus(t, r, http.StatusConflict)
	})
}

func TestHeartbeat(t *testing.T) {
	h := newHarness(t, false)
	r := h.do(t, "POST", "/v1/heartbeats", executorToken, `{"task_id":"T-2026-044","from":"executor","note":"halfway"}`)
	wantStatus(t, r, http.StatusAccepted)
	if h.tasks.calls[0] != "Heartbeat T-2026-044" || h.tasks.beats[0] != (task.HeartbeatInput{From: amp.RoleExecutor, Note: "halfway"}) {
		t.Errorf("calls %v, beats %+v", h.tasks.calls, h.tasks.beats)
	}

	r = h.do(t, "POST", "/v1/heartbeats", reviewerToken, `{"task_id":"T-2026-044","from":"executor"}`)
	wantStatus(t, r, http.StatusForbidden)

	r = h.do(t, "POST", "/v1/heartbeats", executorToken, `{"task_id":"T-44","from":"system"}`)
	wantStatus(t, r, http.StatusBadRequest)
	if e := r.errorBody(t); !hasField(e.Fields, "task_id") || !hasField(e.Fields, "from") {
		t.Errorf("fields %+v", e.Fields)
	}

	h.tasks.err = &task.Error{Code: task.CodeNotFound, Message: "no such task"}
	r = h.do(t, "POST", "/v1/heartbeats", executorToken, `{"task_id":"T-2026-999","from":"executor"}`)
	wantStatus(t, r, http.StatusNotFound)
}

// TestHeartbeatFromDefault: from defaults to the token's role, as an
// ACK's as does; an open API, with no token to read it from, needs it.
func TestHeartbeatFromDefault(t *testing.T) {
	t.Run("TokensRole", func(t *testing.T) {
		h := newHarness(t, false)
		wantStatus(t, h.do(t, "POST", "/v1/heartbeats", reviewerToken, `{"task_id":"T-2026-044"}`), http.StatusAccepted)
		if len(h.tasks.beats) != 1 || h.tasks.beats[0].From != amp.RoleReviewer {
			t.Errorf("beats %+v, want one from reviewer", h.tasks.beats)
		}
	})
	t.Run("AdminTokenRefused", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.do(t, "POST", "/v1/heartbeats", adminToken, `{"task_id":"T-2026-044"}`)
		wantStatus(t, r, http.StatusBadRequest)
		if e := r.errorBody(t); !hasField(e.Fields, "from") {
			t.Errorf("fields %+v, want from", e.Fields)
		}
	})
	t.Run("OpenNeedsFrom", func(t *testing.T) {
		h := newHarness(t, true)
		r := h.do(t, "POST", "/v1/heartbeats", "", `{"task_id":"T-2026-044"}`)
		wantStatus(t, r, http.StatusBadRequest)
		if e := r.errorBody(t); !hasField(e.Fields, "from") || !strings.Contains(e.Message, "no tokens") {
			t.Errorf("error %+v", e)
		}
	})
}
