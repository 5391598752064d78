package goals

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
)

// FakeGoals keeps started goals and answers their states.
type fakeGoals struct {
	mu      sync.Mutex
	started []goal.Goal
	by      []string
}

func (f *fakeGoals) Start(_ context.Context, g goal.Goal, coordinator string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started, f.by = append(f.started, g), append(f.by, coordinator)
	return nil
}

func (f *fakeGoals) State(_ context.Context, id string) (goal.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.started {
		if g.ID == id {
			return goal.State{Goal: g, Status: goal.StatusRunning, Target: "main", Tasks: []goal.TaskState{
				{Key: "a", Status: goal.TaskDone, TaskID: "T-2026-001", Branch: goal.Branch(id, "a")},
				{Key: "b", Status: goal.TaskRunning, TaskID: "T-2026-002", BlockedBy: []string{"a"}},
				{Key: "c", Status: goal.TaskWaiting, BlockedBy: []string{"b"}, WaitingOn: []string{"b"}},
			}}, nil
		}
	}
	return goal.State{}, &task.Error{Code: task.CodeNotFound, Message: "no goal " + id}
}

type fakeTasks map[string]task.State

func (f fakeTasks) State(_ context.Context, id string) (task.State, error) { return f[id], nil }

const goalJSON = `{"description":"ship","repo":"/src/app","tasks":[
 {"key":"a","plan":{"description":"a","subtasks":[{"subtask_id":"1","description":"a","estimated_lines":1}],"acceptance_criteria":["a"],"risk_level":"low"}},
 {"key":"b","blocked_by":["a"],"plan":{"description":"b","subtasks":[{"subtask_id":"1","description":"b","estimated_lines":1}],"acceptance_criteria":["b"],"risk_level":"low"}},
 {"key":"c","blocked_by":["b"],"plan":{"description":"c","subtasks":[{"subtask_id":"1","description":"c","estimated_lines":1}],"acceptance_criteria":["c"],"risk_level":"low"}}]}`

func TestGoalRoutes(t *testing.T) {
	g := &fakeGoals{}
	api := httpapi.New(httpapi.Options{Tokens: []config.AuthToken{
		{Name: "coord", Token: "coord-token", Role: "coordinator"}, {Name: "exec", Token: "exec-token", Role: "executor"}}})
	Register(api, Options{Goals: g, Tasks: fakeTasks{"T-2026-001": {Status: task.StatusDone, CostUSD: 1.25}, "T-2026-002": {Status: task.StatusInReview, CostUSD: 0.5}}})
	url := httpapitest.Serve(t, api)

	if r := httpapitest.Do(t, "POST", url+"/v1/goals", "exec-token", goalJSON); r.Status != http.StatusForbidden {
		t.Errorf("an executor starts a goal: %d %s", r.Status, r.Body)
	}
	cycle := strings.Replace(goalJSON, `{"key":"a",`, `{"key":"a","blocked_by":["c"],`, 1)
	r := httpapitest.Do(t, "POST", url+"/v1/goals", "coord-token", cycle)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "tasks a → c → b → a form a cycle") || !strings.Contains(string(r.Body), `"tasks[0].blocked_by"`) {
		t.Fatalf("a cycle: %d %s", r.Status, r.Body)
	}
	if len(g.started) != 0 {
		t.Fatal("a refused goal started")
	}
	r = httpapitest.Do(t, "POST", url+"/v1/goals", "coord-token", goalJSON)
	var started StartResponse
	if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &started) != nil || !goal.ValidID(started.GoalID) {
		t.Fatalf("start: %d %s", r.Status, r.Body)
	}
	if len(g.started) != 1 || g.by[0] != "coord" || g.started[0].Tasks[2].Plan.Branch != goal.Branch(started.GoalID, "c") {
		t.Fatalf("started %+v by %v", g.started, g.by)
	}
	r = httpapitest.Do(t, "GET", url+"/v1/goals/"+started.GoalID, "coord-token", nil)
	var v View
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &v) != nil {
		t.Fatalf("show: %d %s", r.Status, r.Body)
	}
	if v.CostUSD != 1.75 || v.Tasks[1].TaskStatus != task.StatusInReview || v.Tasks[1].CostUSD != 0.5 || v.Tasks[2].WaitingOn[0] != "b" {
		t.Errorf("view %+v", v)
	}
	if r := httpapitest.Do(t, "GET", url+"/v1/goals/G-ffffffff", "coord-token", nil); r.Status != http.StatusNotFound {
		t.Errorf("an unknown goal: %d %s", r.Status, r.Body)
	}
}

// TestGoalDraft: a goal file with only a description is refused, naming
// goals.planner, by a server without a planner, and starts planning on
// one with.
func TestGoalDraft(t *testing.T) {
	const draft = `{"description": "ship the billing page", "repo": "/src/app"}`
	for _, planner := range []bool{false, true} {
		g := &fakeGoals{}
		api := httpapi.New(httpapi.Options{Tokens: []config.AuthToken{{Name: "coord", Token: "coord-token", Role: "coordinator"}}})
		Register(api, Options{Goals: g, Tasks: fakeTasks{}, Planner: planner})
		url := httpapitest.Serve(t, api)
		r := httpapitest.Do(t, "POST", url+"/v1/goals", "coord-token", draft)
		if !planner {
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "goals.planner") || len(g.started) != 0 {
				t.Errorf("without a planner: %d %s", r.Status, r.Body)
			}
			continue
		}
		var started StartResponse
		if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &started) != nil || started.Status != goal.StatusPlanning {
			t.Fatalf("with a planner: %d %s", r.Status, r.Body)
		}
		if len(g.started) != 1 || len(g.started[0].Tasks) != 0 || g.started[0].Description != "ship the billing page" {
			t.Errorf("started %+v", g.started)
		}
		if r := httpapitest.Do(t, "POST", url+"/v1/goals", "coord-token", `{"repo": "/src/app"}`); r.Status != http.StatusBadRequest ||
			!strings.Contains(string(r.Body), "description") {
			t.Errorf("a draft without a description: %d %s", r.Status, r.Body)
		}
	}
}
