package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRateLimit sends more writing requests than http.rate allows, on
// the API's own routes and on a system's added ones, token and Open.
func TestRateLimit(t *testing.T) {
	now := testNow
	h := &harness{tasks: &fakeTasks{}, store: newTestStore(t)}
	h.srv = New(Options{Tasks: h.tasks, Store: h.store, Tokens: testTokens, Rate: 2,
		Now: func() time.Time { return now }, PollInterval: 10 * time.Millisecond})
	addThing(h)
	h.srv.Add(Spec{}, Route{Pattern: "POST /v1/things/open", Open: true,
		Handler:   func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, http.StatusOK, map[string]bool{"ok": true}) },
		Operation: map[string]any{"summary": "Post without a token"}})
	h.ts = httptestServer(t, h.srv.Handler())
	heartbeat := `{"task_id":"T-2026-044","from":"executor","note":"working"}`

	for i := range 2 {
		if r := h.do(t, "POST", "/v1/heartbeats", executorToken, heartbeat); r.status == http.StatusTooManyRequests {
			t.Fatalf("request %d refused within the rate: %s", i+1, r.body)
		}
	}
	t.Run("OverTheRate", func(t *testing.T) {
		r := h.do(t, "POST", "/v1/heartbeats", executorToken, heartbeat)
		wantStatus(t, r, http.StatusTooManyRequests)
		if e := r.errorBody(t); e.Code != "rate_limited" {
			t.Errorf("code %s, want rate_limited", e.Code)
		}
		if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 || secs > 30 {
			t.Errorf("Retry-After %q, want the seconds until one request is refilled (30 at 2 a minute)", r.header.Get("Retry-After"))
		}
		h.tasks.mu.Lock()
		n := len(h.tasks.beats)
		h.tasks.mu.Unlock()
		if n != 2 {
			t.Errorf("%d heartbeats reached the tasks, want 2", n)
		}
	})
	t.Run("OtherTokenUnaffected", func(t *testing.T) {
		wantStatus(t, h.do(t, "POST", "/v1/things", adminToken, `{"name":"x"}`), http.StatusCreated)
	})
	t.Run("ReadsUnlimited", func(t *testing.T) {
		for range 5 {
			wantStatus(t, h.do(t, "GET", "/v1/tasks/T-2026-044", executorToken, ""), http.StatusOK)
		}
	})
	t.Run("AddedRoutes", func(t *testing.T) {
		wantStatus(t, h.do(t, "POST", "/v1/things", adminToken, `{"name":"y"}`), http.StatusCreated)
		r := h.do(t, "POST", "/v1/things", adminToken, `{"name":"z"}`)
		wantStatus(t, r, http.StatusTooManyRequests)
		if r.header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
		for range 2 {
			wantStatus(t, h.do(t, "POST", "/v1/things/open", "agent-key-a", `{}`), http.StatusOK)
		}
		wantStatus(t, h.do(t, "POST", "/v1/things/open", "agent-key-a", `{}`), http.StatusTooManyRequests)
		wantStatus(t, h.do(t, "POST", "/v1/things/open", "agent-key-b", `{}`), http.StatusOK)
	})
	t.Run("Refilled", func(t *testing.T) {
		now = now.Add(30 * time.Second)
		wantStatus(t, h.do(t, "POST", "/v1/heartbeats", executorToken, heartbeat), http.StatusAccepted)
	})
	t.Run("Documented", func(t *testing.T) {
		raw, err := h.srv.OpenAPI()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"POST /v1/heartbeats", "POST /v1/things", "POST /v1/things/open"} {
			if !documents429(t, raw, p) {
				t.Errorf("%s lists no 429 with Retry-After", p)
			}
		}
	})
}

// documents429 reports whether the OpenAPI document raw lists, for the
// route pattern, a 429 answer with a Retry-After header.
func documents429(t *testing.T, raw []byte, pattern string) bool {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]any `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	method, path, _ := strings.Cut(pattern, " ")
	_, ok := doc.Paths[path][strings.ToLower(method)].Responses["429"].Headers["Retry-After"]
	return ok
}
