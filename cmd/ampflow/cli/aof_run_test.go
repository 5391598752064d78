package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAOFRunCommands drives dispatch, heartbeat, report, session-end and
// list against a fake API: what each sends, and what it prints.
func TestAOFRunCommands(t *testing.T) {
	var mu sync.Mutex
	sent := map[string]map[string]any{}
	record := func(r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		sent[r.URL.Path] = m
		mu.Unlock()
	}
	const running = `{"task":{"taskId":"TASK-2026-02-09-001","title":"Users API","status":"in_progress","metadata":{},"workLog":[],"rev":2,` +
		`"heartbeat":{"taskId":"TASK-2026-02-09-001","agentId":"swe-backend","beatCount":1,"lastHeartbeat":"2026-02-09T21:00:00.000Z","expiresAt":"2026-02-09T21:05:00.000Z"}},"changed":true}`
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/aof/tasks/{id}/dispatch", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		io.WriteString(w, running)
	})
	mux.HandleFunc("POST /v1/aof/tasks/{id}/heartbeat", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		io.WriteString(w, running)
	})
	mux.HandleFunc("POST /v1/aof/messages", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"error":{"code":"not_running","message":"task TASK-2026-02-09-001 is not in_progress"}}`)
	})
	mux.HandleFunc("POST /v1/aof/session-end", func(w http.ResponseWriter, r *http.Request) {
		record(r)
		io.WriteString(w, `{"applied":[{"taskId":"TASK-2026-02-09-001","title":"Users API","status":"review","metadata":{},"workLog":[],"rev":3}]}`)
	})
	mux.HandleFunc("GET /v1/aof/tasks", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent["list"] = map[string]any{"query": r.URL.RawQuery}
		mu.Unlock()
		io.WriteString(w, `{"tasks":[{"taskId":"TASK-2026-02-09-001","title":"Users API","assignee":"swe-backend","status":"ready","metadata":{},"workLog":[],"rev":1}],"next_cursor":"TASK-2026-02-09-001"}`)
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(context.Background(), Options{Args: args, Stdout: &out, Stderr: &errb, LookupEnv: func(k string) (string, bool) {
			if k == "AMPFLOW_API_URL" {
				return ts.URL, true
			}
			return "", false
		}, Now: func() time.Time { return testNow }})
		return code, out.String(), errb.String()
	}
	get := func(path string) map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return sent[path]
	}

	t.Run("Dispatch", func(t *testing.T) {
		code, out, errs := run("aof", "dispatch", "TASK-2026-02-09-001", "--agent", "swe-backend", "--ttl", "10m")
		if code != 0 || out != "TASK-2026-02-09-001 dispatched to swe-backend: in_progress; heartbeat 1, due by 2026-02-09T21:05:00.000Z\n" {
			t.Fatalf("%d %q %q", code, out, errs)
		}
		if b := get("/v1/aof/tasks/TASK-2026-02-09-001/dispatch"); b["agentId"] != "swe-backend" || b["ttlMs"] != float64(600000) {
			t.Errorf("sent %v", b)
		}
		if code, _, errs := run("aof", "dispatch", "TASK-2026-02-09-001"); code != ExitUsage || !strings.Contains(errs, "--agent") {
			t.Errorf("without --agent: %d %q", code, errs)
		}
	})
	t.Run("Heartbeat", func(t *testing.T) {
		code, out, errs := run("aof", "heartbeat", "TASK-2026-02-09-001", "-o", "json")
		if code != 0 || !strings.Contains(out, `"changed":true`) || !strings.Contains(out, `"beatCount":1`) {
			t.Fatalf("%d %q %q", code, out, errs)
		}
		if b := get("/v1/aof/tasks/TASK-2026-02-09-001/heartbeat"); b["agentId"] != "" {
			t.Errorf("sent %v: an empty agentId leaves it to the token", b)
		}
	})
	t.Run("Report", func(t *testing.T) {
		code, _, errs := run("aof", "report", "TASK-2026-02-09-001")
		if code != ExitUsage || !strings.Contains(errs, "--from") || !strings.Contains(errs, "--outcome") || !strings.Contains(errs, "--summary") {
			t.Errorf("without flags: %d %q", code, errs)
		}
		code, _, errs = run("aof", "report", "TASK-2026-02-09-001", "--from", "swe-backend", "--outcome", "done", "--summary", "outputs/summary.md",
			"--tests-total", "3", "--tests-passed", "3", "--deliverable", "src/api.ts", "-o", "json")
		if code != ExitFailed || !strings.Contains(errs, `"code":"not_running"`) {
			t.Errorf("refused: %d %q", code, errs)
		}
		b := get("/v1/aof/messages")
		p, _ := b["payload"].(map[string]any)
		if b["protocol"] != "aof" || b["type"] != "completion.report" || b["fromAgent"] != "swe-backend" || b["toAgent"] != "dispatcher" ||
			p["outcome"] != "done" || p["summaryRef"] != "outputs/summary.md" || p["tests"].(map[string]any)["passed"] != float64(3) {
			t.Errorf("sent %v", b)
		}
	})
	t.Run("SessionEnd", func(t *testing.T) {
		code, out, errs := run("aof", "session-end")
		if code != 0 || out != "TASK-2026-02-09-001 review\n" {
			t.Fatalf("%d %q %q", code, out, errs)
		}
		if b := get("/v1/aof/session-end"); len(b) != 0 {
			t.Errorf("sent %v", b)
		}
		if code, _, _ := run("aof", "session-end", "--agent", "a", "--every-agent"); code != ExitUsage {
			t.Errorf("both: %d", code)
		}
	})
	t.Run("List", func(t *testing.T) {
		code, out, errs := run("aof", "task", "list", "--assignee", "me", "--status", "ready", "--wait", "30s", "-o", "json")
		if code != 0 || !strings.HasPrefix(out, `[{"taskId":"TASK-2026-02-09-001"`) || errs != "{\"next_cursor\":\"TASK-2026-02-09-001\"}\n" {
			t.Fatalf("%d %q %q", code, out, errs)
		}
		if q := get("list")["query"]; q != "assignee=me&status=ready&wait=30s" {
			t.Errorf("query %v", q)
		}
		code, out, _ = run("aof", "task", "list")
		if code != 0 || !strings.Contains(out, "TASK-2026-02-09-001  ready") {
			t.Errorf("text: %d %q", code, out)
		}
	})
}
