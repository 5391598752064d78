package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

func TestUnauthenticated(t *testing.T) {
	h := newHarness(t, false)
	for _, tc := range []struct{ name, header string }{
		{"NoHeader", ""},
		{"WrongToken", "Bearer not-a-token"},
		{"PrefixOfToken", "Bearer " + adminToken[:5]},
		{"OtherScheme", "Basic " + adminToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", h.ts.URL+"/v1/tasks", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := h.ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	r := h.do(t, "POST", "/v1/messages", "", taskResult)
	wantStatus(t, r, http.StatusUnauthorized)
	if e := r.errorBody(t); e.Code != codeUnauthenticated {
		t.Errorf("error %+v", e)
	}
	if h.tasks.callCount() != 0 {
		t.Errorf("unauthenticated requests reached the tasks: %v", h.tasks.calls)
	}
}

func TestOpenAPI(t *testing.T) {
	h := newHarness(t, true)
	r := h.do(t, "POST", "/v1/messages", "", reviewVerdict)
	wantStatus(t, r, http.StatusAccepted)
	r = h.do(t, "POST", "/v1/tasks/T-2026-044/cancel", "", `{"reason":"test"}`)
	wantStatus(t, r, http.StatusOK)
	if h.tasks.cancels[0].By != OpenName {
		t.Errorf("by = %q, want %q", h.tasks.cancels[0].By, OpenName)
	}
}

func TestLoopbackOnly(t *testing.T) {
	open := New(Options{Tasks: &fakeTasks{}})
	closed := New(Options{Tasks: &fakeTasks{}, Tokens: testTokens})
	for _, tc := range []struct {
		addr     string
		openOK   bool
		closedOK bool
	}{
		{"127.0.0.1:8080", true, true},
		{"[::1]:8080", true, true},
		{"localhost:8080", true, true},
		{":8080", false, true},
		{"0.0.0.0:8080", false, true},
		{"192.168.1.10:8080", false, true},
		{"example.com:8080", false, true},
	} {
		if err := open.LoopbackOnly(tc.addr); (err == nil) != tc.openOK {
			t.Errorf("open LoopbackOnly(%q) = %v", tc.addr, err)
		}
		if err := closed.LoopbackOnly(tc.addr); (err == nil) != tc.closedOK {
			t.Errorf("with tokens LoopbackOnly(%q) = %v", tc.addr, err)
		}
	}
}

func TestLogStart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tokens []config.AuthToken
		warn   bool
	}{{"Open", nil, true}, {"WithTokens", testTokens, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := New(Options{Tasks: &fakeTasks{}, Tokens: tc.tokens, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
			s.LogStart("127.0.0.1:8233")
			out := buf.String()
			if !strings.Contains(out, "addr=127.0.0.1:8233") || strings.Contains(out, OpenWarning) != tc.warn {
				t.Errorf("log %q; want the address, and the open warning: %v", out, tc.warn)
			}
			if strings.Contains(out, adminToken) {
				t.Errorf("log %q shows a token", out)
			}
		})
	}
}

func TestUnknownRoutes(t *testing.T) {
	h := newHarness(t, false)
	r := h.do(t, "GET", "/v2/everything", adminToken, "")
	wantStatus(t, r, http.StatusNotFound)
	if e := r.errorBody(t); e.Code != task.CodeNotFound {
		t.Errorf("error %+v", e)
	}
	r = h.do(t, "DELETE", "/v1/tasks", adminToken, "")
	wantStatus(t, r, http.StatusMethodNotAllowed)
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "POST") || !strings.Contains(allow, "GET") {
		t.Errorf("Allow = %q", allow)
	}
	r.errorBody(t)
}

func TestHealthz(t *testing.T) {
	h := newHarness(t, false)
	r := h.do(t, "GET", "/healthz", "", "")
	wantStatus(t, r, http.StatusOK)
	if string(r.body) != "{\"ok\":true}\n" {
		t.Errorf("body %s", r.body)
	}
}

func TestMount(t *testing.T) {
	h := newHarness(t, false)
	h.srv.Mount("POST /slack/interactions", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	r := h.do(t, "POST", "/slack/interactions", "", "payload=x")
	wantStatus(t, r, http.StatusTeapot)
}

func TestStatusTable(t *testing.T) {
	for code, want := range map[task.Code]int{
		task.CodeInvalid: 400, task.CodeNotFound: 404, task.CodeUnexpected: 409, task.CodeConflict: 409,
		task.CodeSuspended: 423, task.CodeForbidden: 403, task.CodeFinished: 409, task.CodeUnavailable: 503,
		task.CodeInternal: 500, codeUnauthenticated: 401, "made_up": 500,
	} {
		if got := (&Server{statusOf: statusOf}).httpStatus(code); got != want {
			t.Errorf("httpStatus(%s) = %d, want %d", code, got, want)
		}
	}
}

// TestDeciderIsTokenName checks that a decision over the API is taken
// under the admin token's name, and that a request cannot name another
// decider.
func TestDeciderIsTokenName(t *testing.T) {
	h := newHarness(t, false)
	h.openDecisions(openDecision())
	r := h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, `{"option":"approve","by":"alice","digest":"`+testDigest+`"}`)
	wantStatus(t, r, http.StatusBadRequest)
	if len(h.tasks.decides) != 0 {
		t.Fatalf("a decision naming its own decider reached the task: %+v", h.tasks.decides)
	}
	r = h.do(t, "POST", "/v1/decisions/T-2026-044-d1", adminToken, decideBody("approve", "", testDigest))
	wantStatus(t, r, http.StatusOK)
	if len(h.tasks.decides) != 1 || h.tasks.decides[0].By != "kircerta" {
		t.Errorf("decides %+v, want one by the token's name kircerta", h.tasks.decides)
	}
}

// TestOpenName checks who an open API acts as when the worker names the
// local user (as `ampflow dev` does).
func TestOpenName(t *testing.T) {
	tasks, store := &fakeTasks{}, newTestStore(t)
	d := openDecision()
	store.save(d.Subject, nil, &d)
	ts := httptestServer(t, New(Options{Tasks: tasks, Store: store, OpenName: "ana"}).Handler())
	req, err := http.NewRequest("POST", ts.URL+"/v1/decisions/T-2026-044-d1", strings.NewReader(decideBody("approve", "", testDigest)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(tasks.decides) != 1 || tasks.decides[0].By != "ana" {
		t.Errorf("status %d, decides %+v; want one by ana", resp.StatusCode, tasks.decides)
	}
}
