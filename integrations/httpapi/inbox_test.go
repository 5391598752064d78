package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
)

func dispatchMessage() amp.Message {
	return amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-044", testNow, &amp.TaskDispatch{Branch: "feature/x"})
}

func TestInbox(t *testing.T) {
	h := newHarness(t, false)
	h.store.setInbox([]amp.Message{dispatchMessage()})
	r := h.do(t, "GET", "/v1/inbox?role=executor", adminToken, "")
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

	// An inbox is its role's and the admins' only.
	for _, c := range []struct{ token, q string }{{coordToken, "role=executor"}, {reviewerToken, "role=executor"}, {executorToken, "role=reviewer"}} {
		r = h.do(t, "GET", "/v1/inbox?"+c.q, c.token, "")
		wantStatus(t, r, http.StatusForbidden)
	}
	wantStatus(t, h.do(t, "GET", "/v1/inbox?role=executor", executorToken, ""), http.StatusOK)

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
		if string(r.body) != "{\"role\":\"executor\",\"messages\":[],\"acked\":[]}\n" {
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
