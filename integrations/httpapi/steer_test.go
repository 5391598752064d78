package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

type fakeSteerer struct {
	mu  sync.Mutex
	got []task.SteerInput
}

func (f *fakeSteerer) Steer(_ context.Context, taskID string, in task.SteerInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, in)
	return nil
}

func steerHarness(t *testing.T) (*harness, *fakeSteerer) {
	t.Helper()
	h := &harness{tasks: &fakeTasks{}, store: newTestStore(t)}
	st := &fakeSteerer{}
	h.srv = New(Options{Tasks: h.tasks, Store: h.store, Messages: h.store.DB, Steer: st, Tokens: testTokens,
		Now: func() time.Time { return testNow }})
	h.ts = httptestServer(t, h.srv.Handler())
	h.tasks.state = task.State{TaskID: "T-2026-044", Status: task.StatusInProgress, Coordinator: "gemini"}
	return h, st
}

func TestSay(t *testing.T) {
	h, st := steerHarness(t)
	r := h.do(t, "POST", "/v1/tasks/T-2026-044/messages", coordToken, `{"text": "use the v2 client"}`)
	wantStatus(t, r, http.StatusCreated)
	var m ssot.TaskMessage
	r.decode(t, &m)
	if m.ID == 0 || m.Sender != "gemini" || m.Kind != ssot.TaskMessageSay || m.Delivered() {
		t.Fatalf("message %+v", m)
	}
	if len(st.got) != 1 || st.got[0].ID != m.ID || st.got[0].By != "gemini" {
		t.Fatalf("the task was told %+v", st.got)
	}
	r = h.do(t, "GET", "/v1/tasks/T-2026-044/messages", executorToken, "")
	wantStatus(t, r, http.StatusOK)
	var list TaskMessagesResponse
	r.decode(t, &list)
	if len(list.Messages) != 1 || list.Messages[0].Text != "use the v2 client" {
		t.Fatalf("messages %+v", list)
	}
}

func TestSayRefused(t *testing.T) {
	for _, c := range []struct {
		name, token, body string
		state             task.Status
		status            int
		field             string
	}{
		{"NoText", adminToken, `{"text": "  "}`, task.StatusInProgress, 400, "text"},
		{"TooLong", adminToken, `{"text": "` + strings.Repeat("x", ssot.MaxTaskMessageText+1) + `"}`, task.StatusInProgress, 400, "text"},
		{"UnknownField", adminToken, `{"text": "x", "to": "executor"}`, task.StatusInProgress, 400, "to"},
		{"OtherCoordinator", "", `{"text": "x"}`, task.StatusInProgress, 403, ""},
		{"Executor", executorToken, `{"text": "x"}`, task.StatusInProgress, 403, ""},
		{"Ended", adminToken, `{"text": "x"}`, task.StatusDone, 409, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, st := steerHarness(t)
			h.tasks.state.Status = c.state
			token := c.token
			if token == "" {
				// A coordinator that did not start the task.
				h.tasks.state.Coordinator = "someone-else"
				token = coordToken
			}
			r := h.do(t, "POST", "/v1/tasks/T-2026-044/messages", token, c.body)
			wantStatus(t, r, c.status)
			if c.field != "" && !hasField(r.errorBody(t).Fields, c.field) {
				t.Errorf("error %+v does not name %s", r.errorBody(t), c.field)
			}
			if ms, _ := h.store.TaskMessages(context.Background(), "T-2026-044"); len(ms) != 0 || len(st.got) != 0 {
				t.Errorf("a refused message was kept (%d) or told (%d)", len(ms), len(st.got))
			}
		})
	}
}

func TestInterrupt(t *testing.T) {
	h, st := steerHarness(t)
	// Admins only: the coordinator that started the task may not.
	wantStatus(t, h.do(t, "POST", "/v1/tasks/T-2026-044/interrupt", coordToken, "{}"), http.StatusForbidden)
	r := h.do(t, "POST", "/v1/tasks/T-2026-044/interrupt", adminToken, "{}")
	wantStatus(t, r, http.StatusAccepted)
	var m ssot.TaskMessage
	r.decode(t, &m)
	if m.Kind != ssot.TaskMessageInterrupt || m.Sender != "kircerta" {
		t.Fatalf("interrupt %+v", m)
	}
	if len(st.got) != 0 {
		t.Errorf("an interrupt told the task %+v; the run reads it from the store", st.got)
	}
	h.tasks.state.Interrupted = &task.Interruption{Role: "executor", By: "kircerta"}
	wantStatus(t, h.do(t, "POST", "/v1/tasks/T-2026-044/interrupt", adminToken, "{}"), http.StatusConflict)
	h.tasks.state.Interrupted, h.tasks.state.Status = nil, task.StatusCICheck
	wantStatus(t, h.do(t, "POST", "/v1/tasks/T-2026-044/interrupt", adminToken, "{}"), http.StatusConflict)
	if ms, _ := h.store.TaskMessages(context.Background(), "T-2026-044"); len(ms) != 1 {
		t.Errorf("%d interrupts kept, want 1", len(ms))
	}
}
