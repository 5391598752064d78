package toolcalls

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/config/toolpolicy"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
)

// fakeTask is a task that records tool calls as the workflow does: allow
// and deny at once, an ask pending until decide.
type fakeTask struct {
	mu      sync.Mutex
	seq     int
	records []ssot.Record
}

func (f *fakeTask) ToolCall(_ context.Context, taskID string, in task.ToolCall) (task.ToolCall, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	in.ID, in.TaskID, in.At = fmt.Sprintf("%s-tc%d", taskID, f.seq), taskID, time.Now()
	in.Decision, in.By = in.Action, task.ByPolicy
	if in.Action == "ask" {
		in.Decision, in.By = task.ToolPending, ""
	}
	f.add(in.ID, in)
	return in, nil
}

func (f *fakeTask) add(id string, c task.ToolCall) {
	b, _ := json.Marshal(c)
	f.records = append(f.records, ssot.Record{TaskID: c.TaskID, ID: id, Kind: task.RecordToolCall, Body: b})
}

func (f *fakeTask) decide(id, by string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.records {
		if r.ID == id {
			var c task.ToolCall
			_ = json.Unmarshal(r.Body, &c)
			c.Decision, c.By, c.Option = task.ToolAllow, by, task.OptAllowOnce
			f.add(id+task.ToolCallOutcome, c)
			return
		}
	}
}

func (f *fakeTask) Get(_ context.Context, id string) (ssot.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.records {
		if r.ID == id {
			return r, nil
		}
	}
	return ssot.Record{}, fmt.Errorf("record %s: %w", id, ssot.ErrNotFound)
}

func (f *fakeTask) History(_ context.Context, taskID string, _ ssot.Page) ([]ssot.Record, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ssot.Record{{TaskID: taskID, ID: "plan-" + taskID, Kind: "message", Body: []byte(`{}`)}}, f.records...), "", nil
}

func serve(t *testing.T) (*fakeTask, string) {
	f := &fakeTask{}
	api := httpapi.New(httpapi.Options{Tasks: nil, Tokens: []config.AuthToken{{Token: "exec-token", Role: "executor", Name: "exec"}}})
	pol, err := toolpolicy.New(toolpolicy.DefaultRules(), toolpolicy.Allow)
	if err != nil {
		t.Fatal(err)
	}
	Register(api, Options{Tasks: f, Store: f, Policy: pol, AskTimeout: time.Minute, Poll: 10 * time.Millisecond})
	return f, httpapitest.Serve(t, api)
}

func call(t *testing.T, method, url string, body any) (int, task.ToolCall, string) {
	t.Helper()
	r := httpapitest.Do(t, method, url, "exec-token", body)
	var c task.ToolCall
	_ = json.Unmarshal(r.Body, &c)
	return r.Status, c, string(r.Body)
}

func TestToolCallsAPI(t *testing.T) {
	f, url := serve(t)
	bash := func(cmd string) task.ToolCallRequest {
		return task.ToolCallRequest{TaskID: "T-2026-001", CLI: "claude", Tool: "Bash", CWD: "/w",
			Input: json.RawMessage(`{"command":` + fmt.Sprintf("%q", cmd) + `}`)}
	}
	st, c, raw := call(t, "POST", url+"/v1/tool-calls", bash("git push --force origin main"))
	if st != http.StatusOK || c.Decision != task.ToolDeny || c.Rule != "no-force-push" || c.Agent != "exec" || c.Kind != "shell" || c.InputDigest == "" {
		t.Fatalf("force push: %d %s", st, raw)
	}
	st, c, raw = call(t, "POST", url+"/v1/tool-calls?wait=50ms", bash("curl http://127.0.0.1:9/"))
	if st != http.StatusAccepted || c.Decision != task.ToolPending || c.AskTimeout != time.Minute {
		t.Fatalf("curl: %d %s", st, raw)
	}
	go func() { time.Sleep(100 * time.Millisecond); f.decide(c.ID, "ops") }()
	st, got, raw := call(t, "GET", url+"/v1/tool-calls/"+c.ID+"?wait=5s", nil)
	if st != http.StatusOK || got.Decision != task.ToolAllow || got.By != "ops" {
		t.Fatalf("poll: %d %s", st, raw)
	}
	st, _, raw = call(t, "POST", url+"/v1/tool-calls", task.ToolCallRequest{TaskID: "T-1", Tool: "Bash"})
	if st != http.StatusBadRequest || !strings.Contains(raw, "task_id") {
		t.Errorf("bad task id: %d %s", st, raw)
	}
	st, _, raw = call(t, "GET", url+"/v1/tool-calls/nope?wait=1s", nil)
	if st != http.StatusBadRequest {
		t.Errorf("bad id: %d %s", st, raw)
	}
	st, _, raw = call(t, "GET", url+"/v1/tool-calls/T-2026-001-tc9", nil)
	if st != http.StatusNotFound {
		t.Errorf("unknown id: %d %s", st, raw)
	}

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"deny", "allow"}},
		{"?decision=deny", []string{"deny"}},
		{"?tool=Write", nil},
	} {
		req, _ := http.NewRequest("GET", url+"/v1/tasks/T-2026-001/tool-calls"+c.query, nil)
		req.Header.Set("Authorization", "Bearer exec-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var l task.ToolCallList
		_ = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		var got []string
		for _, x := range l.ToolCalls {
			got = append(got, x.Decision)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("list%s = %v, want %v", c.query, got, c.want)
		}
	}
}
