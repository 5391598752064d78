package e2e

import (
	"encoding/json"
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
	planner := newAPIClient(t, p.api, coord)
	backend := planner.as(agent)
	if code, b := planner.call("POST", "/v1/aof/tasks", map[string]any{"taskId": id, "title": "Users API", "assignee": "swe-backend"}, nil); code != http.StatusCreated {
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
		code, b, err := backend.raw("GET", "/v1/aof/tasks?assignee=me&status=in_progress&wait=30s", nil)
		var pg page
		if err != nil || code != http.StatusOK || json.Unmarshal(b, &pg) != nil {
			t.Errorf("long poll: %d %s %v", code, b, err)
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
	var evs struct {
		Events []aofEvent `json:"events"`
	}
	if code, b := planner.call("GET", "/v1/aof/events?task_id="+id, nil, &evs); code != http.StatusOK {
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
