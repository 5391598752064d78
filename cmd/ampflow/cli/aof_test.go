package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	wf "github.com/ampflow/ampflow/workflows/aof"
)

// TestAOFTaskCommands drives the aof commands against a fake API.
func TestAOFTaskCommands(t *testing.T) {
	var created map[string]any
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/aof/tasks", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &created)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"taskId":"TASK-2026-02-09-001","title":"Users API","status":"ready","metadata":{"delegationDepth":0,"reviewRequired":false},"workLog":[],"rev":1}`)
	})
	mux.HandleFunc("GET /v1/aof/tasks/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "TASK-2026-02-09-001" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"code":"task_not_found","message":"task TASK-2026-02-09-002 not found"}}`)
			return
		}
		io.WriteString(w, `{"taskId":"TASK-2026-02-09-001","title":"Users API","status":"review","metadata":{"delegationDepth":1,"reviewRequired":true},`+
			`"workLog":["- 2026-02-09T21:20:00.000Z Progress: half"],"rev":4,"run":{"taskId":"TASK-2026-02-09-001","agentId":"swe-backend","startedAt":"2026-02-09T21:00:00.000Z","status":"running"},"agentReview":{"ampTaskId":"T-2026-0209001001","round":1,"running":true},"artifacts":{"run.json":{"status":"running"},"inputs/handoff.md":"# Handoff Request\n"}}`)
	})
	mux.HandleFunc("GET /v1/aof/events", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"events":[{"seq":1,"id":"e1","type":"task.created","taskId":"`+r.URL.Query().Get("taskId")+`","actor":"a","timestamp":"2026-02-09T21:00:00Z","payload":{}}]}`)
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
		}})
		return code, out.String(), errb.String()
	}
	if code, out, errs := run("aof", "task", "create", "--title", "Users API", "--assignee", "swe-backend", "--no-review"); code != 0 || out != "TASK-2026-02-09-001 ready\n" {
		t.Errorf("create: %d %q %q", code, out, errs)
	}
	if created["reviewRequired"] != false || created["assignee"] != "swe-backend" {
		t.Errorf("sent %v", created)
	}
	if code, _, _ := run("aof", "task", "create"); code != ExitUsage {
		t.Errorf("create without a title: exit %d", code)
	}
	code, out, _ := run("aof", "task", "show", "TASK-2026-02-09-001")
	if code != 0 || !strings.Contains(out, "status:           review") || !strings.Contains(out, "delegation depth: 1") || !strings.Contains(out, "Progress: half") ||
		!strings.Contains(out, "agent review:     T-2026-0209001001 (round 1) waits for the reviewer agent") ||
		!strings.Contains(out, "run:              ended (run.json: running) by swe-backend since 2026-02-09T21:00:00.000Z") {
		t.Errorf("show: %d %q", code, out)
	}
	if code, out, _ := run("aof", "task", "show", "TASK-2026-02-09-001", "-o", "json"); code != 0 || !strings.Contains(out, `"delegationDepth":1`) {
		t.Errorf("show json: %d %q", code, out)
	}
	if code, _, errs := run("aof", "task", "show", "TASK-2026-02-09-002"); code != ExitFailed || !strings.Contains(errs, "not found") {
		t.Errorf("show missing: %d %q", code, errs)
	}
	if code, out, _ := run("aof", "task", "events", "TASK-2026-02-09-001", "-o", "json"); code != 0 || !strings.Contains(out, `"type":"task.created"`) {
		t.Errorf("events: %d %q", code, out)
	}
	if code, out, _ := run("aof", "task", "artifacts", "TASK-2026-02-09-001", "inputs/handoff.md"); code != 0 || out != "# Handoff Request\n" {
		t.Errorf("artifact: %d %q", code, out)
	}
	if code, out, _ := run("aof", "task", "artifacts", "TASK-2026-02-09-001"); code != 0 || !strings.Contains(out, "== run.json\n{\"status\":\"running\"}") {
		t.Errorf("artifacts: %d %q", code, out)
	}
}

func TestAgentReviewLine(t *testing.T) {
	for _, c := range []struct {
		a    wf.AgentReviewState
		want string
	}{
		{wf.AgentReviewState{AMPTaskID: "T-2026-0209001001", Round: 1, Running: true}, "T-2026-0209001001 (round 1) waits for the reviewer agent"},
		{wf.AgentReviewState{AMPTaskID: "T-2026-0209001002", Round: 2, Outcome: "rejected"}, "T-2026-0209001002 (round 2) rejected by the reviewer agent"},
		{wf.AgentReviewState{AMPTaskID: "T-2026-0209001002", Round: 2, Outcome: wf.OutcomeNoVerdict, Fallback: "no ACK"}, "T-2026-0209001002 (round 2) left to the admins: no ACK"},
		{wf.AgentReviewState{AMPTaskID: "T-2026-0209001002", Round: 2, Outcome: wf.OutcomeNoVerdict}, "T-2026-0209001002 (round 2) ended without a verdict: the admins reviewed"},
		{wf.AgentReviewState{Round: 2, Outcome: wf.OutcomeNoVerdict, Fallback: "the agent reported partial"}, "none: left to the admins: the agent reported partial"},
		{wf.AgentReviewState{AMPTaskID: "T-2026-0209001001", Round: 1, Outcome: wf.OutcomeEnded}, "T-2026-0209001001 (round 1) ended: the task left review"},
	} {
		if got := agentReviewLine(c.a); got != c.want {
			t.Errorf("agentReviewLine(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
}
