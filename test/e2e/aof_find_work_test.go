package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAOFFindWork: an AOF agent long-polls for its own work
// (assignee=me) and is answered when a coordinator dispatches a task to
// it; the event log names the coordinator who created and dispatched.
func TestAOFFindWork(t *testing.T) {
	const (
		coord = "aof-find-work-planner-token"
		agent = "aof-find-work-backend-token"
		id    = "TASK-2026-02-09-101"
	)
	p := startDev(t, t.TempDir(), "AMPFLOW_AUTH_TOKENS="+coord+":coordinator:planner,"+agent+":executor:swe-backend")
	hc := &http.Client{Timeout: 90 * time.Second}
	call := func(token, method, path string, body any) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, "http://"+p.api+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := call(coord, "POST", "/v1/aof/tasks", map[string]any{"taskId": id, "title": "Users API", "assignee": "swe-backend"}); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, b)
	}

	type page struct {
		Tasks []struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"tasks"`
	}
	polled := make(chan page, 1)
	start := time.Now()
	go func() {
		code, b := call(agent, "GET", "/v1/aof/tasks?assignee=me&status=in_progress&wait=30s", nil)
		var pg page
		if code != http.StatusOK || json.Unmarshal(b, &pg) != nil {
			t.Errorf("long poll: %d %s", code, b)
		}
		polled <- pg
	}()
	time.Sleep(time.Second) // the poll is waiting; nothing is in progress yet
	mustCLI(t, p, coord, "aof", "dispatch", id, "--agent", "swe-backend")
	select {
	case pg := <-polled:
		if len(pg.Tasks) != 1 || pg.Tasks[0].TaskID != id || pg.Tasks[0].Status != "in_progress" {
			t.Fatalf("the long poll answered %+v", pg)
		}
		if time.Since(start) > 25*time.Second {
			t.Errorf("the long poll answered after %s, not at the dispatch", time.Since(start))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the long poll did not answer")
	}

	out := mustCLI(t, p, agent, "-o", "json", "aof", "task", "list", "--assignee", "me")
	if !strings.Contains(out, `"taskId":"`+id+`"`) {
		t.Errorf("aof task list --assignee me: %s", out)
	}
	if out := mustCLI(t, p, agent, "aof", "heartbeat", id); !strings.Contains(out, id+" heartbeat: in_progress; heartbeat 2") {
		t.Errorf("aof heartbeat: %q", out)
	}
	code, b := call(coord, "GET", "/v1/aof/events?task_id="+id, nil)
	var evs struct {
		Events []aofEvent `json:"events"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &evs) != nil {
		t.Fatalf("events: %d %s", code, b)
	}
	actors := map[string]string{}
	for _, e := range evs.Events {
		if _, ok := actors[e.Type]; !ok {
			actors[e.Type] = e.Actor
		}
	}
	if actors["task.created"] != "planner" || actors["task.transitioned"] != "planner" {
		t.Errorf("actors %v: want the coordinator for the creation and the dispatch", actors)
	}
}
