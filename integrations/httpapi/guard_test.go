package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sendRaw sends a request built by the test, headers and all.
func (h *harness) sendRaw(t *testing.T, method, path, body string, header map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return h.send(t, req)
}

func startBody() string { return `{"plan":` + validPlan + `}` }

func TestGuardContentType(t *testing.T) {
	for _, open := range []bool{true, false} {
		name := map[bool]string{true: "Open", false: "Tokens"}[open]
		t.Run(name+"/TextPlainRefused", func(t *testing.T) {
			h := newHarness(t, open)
			for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
				r := h.sendRaw(t, "POST", "/v1/tasks", startBody(), map[string]string{"Content-Type": ct, "Authorization": "Bearer " + coordToken})
				wantStatus(t, r, http.StatusUnsupportedMediaType)
				if e := r.errorBody(t); e.Code != codeUnsupportedMediaType || !strings.Contains(e.Message, "application/json") {
					t.Errorf("Content-Type %q: error %+v", ct, e)
				}
			}
			if n := h.tasks.callCount(); n != 0 {
				t.Errorf("refused requests reached the tasks: %v", h.tasks.calls)
			}
		})
		t.Run(name+"/JSONAccepted", func(t *testing.T) {
			h := newHarness(t, open)
			r := h.sendRaw(t, "POST", "/v1/tasks", startBody(), map[string]string{"Content-Type": "application/json; charset=utf-8", "Authorization": "Bearer " + coordToken})
			wantStatus(t, r, http.StatusCreated)
		})
	}
}

func TestGuardOrigin(t *testing.T) {
	h := newHarness(t, true)
	json := map[string]string{"Content-Type": "application/json"}
	with := func(origin string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Origin": origin}
	}
	for _, origin := range []string{"http://evil.example", "null", "http://127.0.0.1:1", "file://"} {
		r := h.sendRaw(t, "POST", "/v1/tasks", startBody(), with(origin))
		wantStatus(t, r, http.StatusForbidden)
		if e := r.errorBody(t); !strings.Contains(e.Message, "Origin") {
			t.Errorf("Origin %q: error %+v does not name the Origin", origin, e)
		}
		wantStatus(t, h.sendRaw(t, "GET", "/v1/tasks", "", map[string]string{"Origin": origin}), http.StatusForbidden)
	}
	if n := h.tasks.callCount(); n != 0 {
		t.Fatalf("cross-site requests reached the tasks: %v", h.tasks.calls)
	}
	t.Run("SameOrigin", func(t *testing.T) {
		wantStatus(t, h.sendRaw(t, "POST", "/v1/tasks", startBody(), with(h.ts.URL)), http.StatusCreated)
	})
	t.Run("NoOrigin", func(t *testing.T) {
		wantStatus(t, h.sendRaw(t, "POST", "/v1/tasks", startBody(), json), http.StatusCreated)
	})
}

func TestGuardHost(t *testing.T) {
	port := func(h *harness) string { return h.ts.URL[strings.LastIndex(h.ts.URL, ":"):] }
	t.Run("OpenRefusesOtherHosts", func(t *testing.T) {
		h := newHarness(t, true)
		for _, host := range []string{"evil.example", "evil.example" + port(h), "192.168.1.10" + port(h), "localhost.evil.example"} {
			r := h.sendRaw(t, "GET", "/v1/tasks", "", map[string]string{"Host": host})
			wantStatus(t, r, http.StatusMisdirectedRequest)
			if e := r.errorBody(t); e.Code != codeMisdirected || !strings.Contains(e.Message, "loopback") {
				t.Errorf("Host %q: error %+v", host, e)
			}
		}
		wantStatus(t, h.sendRaw(t, "POST", "/v1/tasks", startBody(), map[string]string{"Host": "evil.example", "Content-Type": "application/json"}), http.StatusMisdirectedRequest)
		if n := h.tasks.callCount(); n != 0 {
			t.Fatalf("misdirected requests reached the tasks: %v", h.tasks.calls)
		}
	})
	t.Run("OpenTakesLoopback", func(t *testing.T) {
		h := newHarness(t, true)
		for _, host := range []string{"127.0.0.1" + port(h), "localhost" + port(h), "LOCALHOST", "[::1]" + port(h), "127.0.0.2"} {
			wantStatus(t, h.sendRaw(t, "GET", "/v1/tasks", "", map[string]string{"Host": host}), http.StatusOK)
		}
	})
	t.Run("TokensTakeAnyHost", func(t *testing.T) {
		h := newHarness(t, false)
		r := h.sendRaw(t, "GET", "/v1/tasks", "", map[string]string{"Host": "api.example.com", "Authorization": "Bearer " + adminToken})
		wantStatus(t, r, http.StatusOK)
	})
}

// The chat callbacks keep their platforms' formats and check their own
// signatures: the guard does not stand in their way.
func TestGuardLeavesChatCallbacks(t *testing.T) {
	var got []string
	h := &harness{tasks: &fakeTasks{}}
	h.srv = New(Options{Tasks: h.tasks})
	h.srv.Mount("POST /slack/interactions", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusOK)
	}))
	h.ts = httptestServer(t, h.srv.Handler())
	r := h.sendRaw(t, "POST", "/slack/interactions", "payload=%7B%7D", map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "Host": "abc.ngrok.example", "Origin": "https://slack.example",
	})
	wantStatus(t, r, http.StatusOK)
	if len(got) != 1 || got[0] != "application/x-www-form-urlencoded" {
		t.Errorf("the Slack handler saw %v", got)
	}
}

func TestMetricsNeedToken(t *testing.T) {
	h := newHarness(t, false)
	wantStatus(t, h.do(t, "GET", "/metrics", "", ""), http.StatusUnauthorized)
	wantStatus(t, h.do(t, "GET", "/metrics", "not-a-token", ""), http.StatusUnauthorized)
	wantStatus(t, h.do(t, "GET", "/metrics", executorToken, ""), http.StatusOK)
	open := newHarness(t, true)
	wantStatus(t, open.do(t, "GET", "/metrics", "", ""), http.StatusOK)
}

func TestHTTPServerTimeouts(t *testing.T) {
	hs := New(Options{Tasks: &fakeTasks{}}).HTTPServer()
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": hs.ReadHeaderTimeout, "ReadTimeout": hs.ReadTimeout,
		"WriteTimeout": hs.WriteTimeout, "IdleTimeout": hs.IdleTimeout,
	} {
		if d <= 0 {
			t.Errorf("%s is not set", name)
		}
	}
}

// A long poll outlasts the server's read and write timeouts: it extends
// its own deadlines by its wait.
func TestInboxLongPollOutlastsTimeouts(t *testing.T) {
	h := &harness{tasks: &fakeTasks{}, store: newTestStore(t)}
	h.srv = New(Options{
		Tasks: h.tasks, Store: h.store, Tokens: testTokens, PollInterval: 10 * time.Millisecond, MaxWait: 5 * time.Second,
		ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond,
	})
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = h.srv.HTTPServer()
	ts.Start()
	t.Cleanup(ts.Close)
	h.ts = ts

	// Past the configured MaxWait is refused.
	wantStatus(t, h.do(t, "GET", "/v1/inbox?role=executor&wait=6s", executorToken, ""), http.StatusBadRequest)

	r := h.do(t, "GET", "/v1/inbox?role=executor&wait=400ms", executorToken, "")
	wantStatus(t, r, http.StatusOK)
	var out InboxResponse
	r.decode(t, &out)
	if out.Role != "executor" || out.Messages == nil {
		t.Errorf("inbox %+v", out)
	}
}

// Guard puts a server with no sign-in of its own behind the open API's
// Host and Origin checks.
func TestGuard(t *testing.T) {
	var reached atomic.Int32
	ts := httptest.NewServer(Guard("the test server", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) })))
	defer ts.Close()
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"Loopback", nil, http.StatusOK},
		{"LocalhostHost", map[string]string{"Host": "localhost" + port}, http.StatusOK},
		{"SameOrigin", map[string]string{"Origin": ts.URL}, http.StatusOK},
		{"ForeignHost", map[string]string{"Host": "rebind.example" + port}, http.StatusMisdirectedRequest},
		{"ForeignOrigin", map[string]string{"Origin": "http://rebind.example" + port}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := reached.Load()
			req, err := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/namespaces/default/workflows", nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("%v: %s %s, want %d", tt.header, resp.Status, body, tt.want)
			}
			if got := reached.Load() > before; got != (tt.want == http.StatusOK) {
				t.Errorf("%v: reached the server %v", tt.header, got)
			}
			if tt.want != http.StatusOK && !strings.Contains(string(body), "the test server") {
				t.Errorf("refusal %s does not name the server", body)
			}
		})
	}
}
