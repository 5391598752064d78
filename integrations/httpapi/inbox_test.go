package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

func dispatchMessage() amp.Message {
	return amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-044", testNow, &amp.TaskDispatch{Branch: "feature/x"})
}

func TestInbox(t *testing.T) {
	h := newHarness(t, false)
	h.store.setInbox([]amp.Message{dispatchMessage()})
	r := h.do(t, "GET", "/v1/inbox?role=executor", coordToken, "")
	wantStatus(t, r, http.StatusOK)
	var out InboxResponse
	r.decode(t, &out)
	if out.Role != amp.RoleExecutor || len(out.Messages) != 1 || out.Messages[0].Dispatch().Branch != "feature/x" {
		t.Errorf("inbox %+v", out)
	}

	r = h.do(t, "GET", "/v1/inbox", reviewerToken, "")
	wantStatus(t, r, http.StatusOK)
	r.decode(t, &out)
	if out.Role != amp.RoleReviewer || len(out.Messages) != 0 {
		t.Errorf("a reviewer token without role read %+v, want the reviewer's empty inbox", out)
	}

	for _, q := range []string{"role=coordinator", "role=executor&wait=61s", "role=executor&wait=soon"} {
		r = h.do(t, "GET", "/v1/inbox?"+q, adminToken, "")
		wantStatus(t, r, http.StatusBadRequest)
	}
}

func TestInboxLongPoll(t *testing.T) {
	t.Run("MessageArrives", func(t *testing.T) {
		h := newHarness(t, false)
		h.store.inboxHook = func(n int) {
			if n == 3 {
				h.store.setInbox([]amp.Message{dispatchMessage()})
			}
		}
		start := time.Now()
		r := h.do(t, "GET", "/v1/inbox?role=executor&wait=30s", executorToken, "")
		wantStatus(t, r, http.StatusOK)
		var out InboxResponse
		r.decode(t, &out)
		if len(out.Messages) != 1 {
			t.Fatalf("inbox %+v, want the message that arrived", out)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("answered after %s, long after the message arrived", d)
		}
		if n := h.store.inboxReads(); n < 3 {
			t.Errorf("Inbox called %d times; the message came on the third", n)
		}
	})
	t.Run("Deadline", func(t *testing.T) {
		h := newHarness(t, false)
		start := time.Now()
		r := h.do(t, "GET", "/v1/inbox?role=executor&wait=150ms", executorToken, "")
		wantStatus(t, r, http.StatusOK)
		if string(r.body) != "{\"role\":\"executor\",\"messages\":[]}\n" {
			t.Errorf("body %s, want an empty inbox", r.body)
		}
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Errorf("answered after %s, before the wait was over", d)
		}
		if n := h.store.inboxReads(); n < 2 {
			t.Errorf("Inbox called %d times, want it polled again", n)
		}
	})
	t.Run("ClientGone", func(t *testing.T) {
		h := newHarness(t, false)
		polled := make(chan struct{}, 100)
		h.store.inboxHook = func(int) { polled <- struct{}{} }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", h.ts.URL+"/v1/inbox?role=executor&wait=60s", nil)
			req.Header.Set("Authorization", "Bearer "+executorToken)
			resp, err := h.ts.Client().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		<-polled
		cancel()
		if err := <-done; err == nil {
			t.Fatal("the cancelled request got an answer")
		}
		// The handler stops polling once the client is gone: the server's
		// Close (in cleanup) would otherwise wait for the full minute.
		closed := make(chan struct{})
		go func() { h.ts.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the long poll went on after the client left")
		}
	})
}

func TestDecisions(t *testing.T) {
	h := newHarness(t, false)
	h.store.setPending([]task.Decision{{ID: "T-2026-044-d1", TaskID: "T-2026-044", Kind: task.KindPlanApproval}})
	r := h.do(t, "GET", "/v1/decisions", executorToken, "")
	wantStatus(t, r, http.StatusOK)
	var out DecisionsResponse
	r.decode(t, &out)
	if len(out.Decisions) != 1 || out.Decisions[0].Kind != task.KindPlanApproval {
		t.Errorf("decisions %+v", out)
	}

	r = h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, `{"option":"approve","note":"fine"}`)
	wantStatus(t, r, http.StatusOK)
	want := task.DecideInput{DecisionID: "T-2026-044-d1", Option: "approve", Note: "fine", By: "kircerta", Channel: "api"}
	if h.tasks.calls[len(h.tasks.calls)-1] != "Decide T-2026-044" || h.tasks.decides[0] != want {
		t.Errorf("calls %v, decide %+v", h.tasks.calls, h.tasks.decides)
	}
	var res task.DecideResult
	r.decode(t, &res)
	if res.Outcome.Option != "approve" || res.Status != task.StatusDispatched {
		t.Errorf("result %+v", res)
	}

	for _, tok := range []string{coordToken, executorToken} {
		r = h.do(t, "POST", "/v1/decisions/T-2026-044-d1", tok, `{"option":"approve"}`)
		wantStatus(t, r, http.StatusForbidden)
	}
	if len(h.tasks.decides) != 1 {
		t.Errorf("a non-admin's decision reached the task")
	}

	r = h.do(t, "POST", "/v1/decisions/T-2026-044", adminToken, `{"option":"approve"}`)
	wantStatus(t, r, http.StatusBadRequest)
	r = h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, `{}`)
	wantStatus(t, r, http.StatusBadRequest)

	h.tasks.err = task.Errorf(task.CodeConflict, "decision T-2026-044-d1 was taken already")
	r = h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, `{"option":"approve"}`)
	wantStatus(t, r, http.StatusConflict)
}

func TestTaskOfDecision(t *testing.T) {
	for id, want := range map[string]string{
		"T-2026-044-d1":   "T-2026-044",
		"T-2026-1044-d12": "T-2026-1044",
		"T-2026-044":      "",
		"T-2026-044-d":    "",
		"T-2026-044-dx":   "",
		"X-d1":            "",
	} {
		got, ok := taskOfDecision(id)
		if got != want || ok != (want != "") {
			t.Errorf("taskOfDecision(%q) = %q, %v; want %q", id, got, ok, want)
		}
	}
}
