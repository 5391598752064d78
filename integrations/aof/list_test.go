package aof

import (
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

func taskIDs(out map[string]any) []string {
	var ids []string
	ts, _ := out["tasks"].([]any)
	for _, t := range ts {
		m, _ := t.(map[string]any)
		id, _ := m["taskId"].(string)
		ids = append(ids, id)
	}
	return ids
}

func TestListTasks(t *testing.T) {
	r := newRig(t,
		config.AuthToken{Token: "coord-token-0123456", Role: amp.RoleCoordinator, Name: "planner"},
		config.AuthToken{Token: "exec-token-01234567", Role: amp.RoleExecutor, Name: "swe-backend"})
	r.tasks.save(wf.Task{TaskID: "TASK-2026-02-09-001", Title: "a", Assignee: "swe-backend", Status: wf.StatusReady})
	r.tasks.save(wf.Task{TaskID: "TASK-2026-02-09-002", Title: "b", Assignee: "swe-qa", Status: wf.StatusReady})
	r.tasks.save(wf.Task{TaskID: "TASK-2026-02-09-003", Title: "c", Assignee: "swe-qa", Status: wf.StatusInProgress,
		Run: &wf.RunInfo{TaskID: "TASK-2026-02-09-003", AgentID: "swe-backend"}})
	r.tasks.save(wf.Task{TaskID: "TASK-2026-02-09-004", Title: "d", Assignee: "swe-backend", Status: wf.StatusDone})

	for _, tc := range []struct {
		name, token, query string
		want               []string
	}{
		{"Mine", "exec-token-01234567", "?assignee=me", []string{"TASK-2026-02-09-001", "TASK-2026-02-09-003", "TASK-2026-02-09-004"}},
		{"MineInStatus", "exec-token-01234567", "?assignee=me&status=in_progress", []string{"TASK-2026-02-09-003"}},
		{"AOFSpelling", "exec-token-01234567", "?assignee=me&status=in-progress", []string{"TASK-2026-02-09-003"}},
		{"ByName", "coord-token-0123456", "?assignee=swe-qa", []string{"TASK-2026-02-09-002", "TASK-2026-02-09-003"}},
		{"Every", "coord-token-0123456", "?status=ready", []string{"TASK-2026-02-09-001", "TASK-2026-02-09-002"}},
		{"MeIsTheCoordinator", "coord-token-0123456", "?assignee=me", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, out := r.as(tc.token, "GET", "/v1/aof/tasks"+tc.query, "")
			if st != 200 {
				t.Fatalf("status %d: %v", st, out)
			}
			if got := taskIDs(out); !equal(got, tc.want) {
				t.Errorf("tasks %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("Paged", func(t *testing.T) {
		st, out := r.as("exec-token-01234567", "GET", "/v1/aof/tasks?assignee=me&limit=2", "")
		if st != 200 || !equal(taskIDs(out), []string{"TASK-2026-02-09-001", "TASK-2026-02-09-003"}) || out["next_cursor"] != "TASK-2026-02-09-003" {
			t.Fatalf("first page %d: %v", st, out)
		}
		st, out = r.as("exec-token-01234567", "GET", "/v1/aof/tasks?assignee=me&limit=2&cursor=TASK-2026-02-09-003", "")
		if st != 200 || !equal(taskIDs(out), []string{"TASK-2026-02-09-004"}) || out["next_cursor"] != nil {
			t.Fatalf("second page %d: %v", st, out)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		for q, field := range map[string]string{"?status=doing": "status", "?limit=0": "limit", "?wait=2h": "wait", "?wait=soon": "wait"} {
			st, out := r.as("exec-token-01234567", "GET", "/v1/aof/tasks"+q, "")
			if st != 400 || errCode(out) != "invalid" || !hasField(out, field) {
				t.Errorf("%s: %d %v, want 400 naming %s", q, st, out, field)
			}
		}
	})

	t.Run("LongPoll", func(t *testing.T) {
		go func() {
			time.Sleep(100 * time.Millisecond)
			r.tasks.save(wf.Task{TaskID: "TASK-2026-02-09-005", Title: "e", Assignee: "swe-backend", Status: wf.StatusReady})
		}()
		start := time.Now()
		st, out := r.as("exec-token-01234567", "GET", "/v1/aof/tasks?assignee=me&status=ready&cursor=TASK-2026-02-09-004&wait=10s", "")
		if st != 200 || !equal(taskIDs(out), []string{"TASK-2026-02-09-005"}) {
			t.Fatalf("%d: %v", st, out)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("answered after %s, not when the task came", time.Since(start))
		}
		st, out = r.as("exec-token-01234567", "GET", "/v1/aof/tasks?assignee=me&status=blocked&wait=1", "")
		if st != 200 || len(taskIDs(out)) != 0 {
			t.Fatalf("empty wait: %d %v", st, out)
		}
	})
}

// TestActorOfCreateAndDispatch: the workflow is told who created and who
// dispatched, the token's name, for its event log.
func TestActorOfCreateAndDispatch(t *testing.T) {
	r := newRig(t, config.AuthToken{Token: "coord-token-0123456", Role: amp.RoleCoordinator, Name: "planner"})
	st, out := r.as("coord-token-0123456", "POST", "/v1/aof/tasks", `{"taskId":"TASK-2026-02-09-001","title":"a","assignee":"swe-backend"}`)
	if st != 201 || out["createdBy"] != "planner" {
		t.Fatalf("create %d: %v", st, out)
	}
	// Who dispatched is the token's; a body naming someone is refused.
	if st, out = r.as("coord-token-0123456", "POST", "/v1/aof/tasks/TASK-2026-02-09-001/dispatch", `{"agentId":"swe-backend","by":"someone"}`); st != 400 || !hasField(out, "by") {
		t.Fatalf("dispatch naming by: %d %v, want 400 naming by", st, out)
	}
	st, out = r.as("coord-token-0123456", "POST", "/v1/aof/tasks/TASK-2026-02-09-001/dispatch", `{"agentId":"swe-backend"}`)
	if st != 200 || len(r.tasks.dispatches) != 1 || r.tasks.dispatches[0].By != "planner" {
		t.Fatalf("dispatch %d %v: %+v", st, out, r.tasks.dispatches)
	}
}

func TestListTasksOpenMe(t *testing.T) {
	r := newRig(t)
	st, out := r.do("GET", "/v1/aof/tasks?assignee=me", "")
	if st != 400 || !hasField(out, "assignee") {
		t.Fatalf("%d %v, want 400 naming assignee", st, out)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func hasField(out map[string]any, path string) bool {
	e, _ := out["error"].(map[string]any)
	fs, _ := e["fields"].([]any)
	for _, f := range fs {
		m, _ := f.(map[string]any)
		if m["path"] == path {
			return true
		}
	}
	return false
}

// TestAgentDefaults: an agent's token that names no agentId heartbeats and
// ends its session as itself.
func TestAgentDefaults(t *testing.T) {
	r := newRig(t, config.AuthToken{Token: "exec-token-01234567", Role: amp.RoleExecutor, Name: "swe-backend"})
	r.tasks.save(wf.Task{TaskID: "TASK-2026-02-09-001", Title: "a", Status: wf.StatusInProgress})
	if st, out := r.as("exec-token-01234567", "POST", "/v1/aof/tasks/TASK-2026-02-09-001/heartbeat", `{}`); st != 200 || len(r.tasks.beats) != 1 || r.tasks.beats[0].AgentID != "swe-backend" {
		t.Fatalf("heartbeat %d %v %+v", st, out, r.tasks.beats)
	}
	if st, out := r.as("exec-token-01234567", "POST", "/v1/aof/session-end", `{}`); st != 200 {
		t.Fatalf("session end %d %v", st, out)
	}
}
