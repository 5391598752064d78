package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/goals"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
)

type cliGoals struct {
	mu sync.Mutex
	g  []goal.Goal
}

func (f *cliGoals) Start(_ context.Context, g goal.Goal, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.g = append(f.g, g)
	return nil
}

func (f *cliGoals) State(_ context.Context, id string) (goal.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.g {
		if g.ID == id {
			return goal.State{Goal: g, Status: goal.StatusRunning, Target: "main", Tasks: []goal.TaskState{
				{Key: "api", Status: goal.TaskRunning, TaskID: "T-2026-007", Branch: goal.Branch(id, "api"),
					Overlaps: []goal.Overlap{{With: "ui", Files: []string{"shared.go"}}}, Queue: task.QueueMerging},
				{Key: "ui", Status: goal.TaskRunning, TaskID: "T-2026-008", Branch: goal.Branch(id, "ui"), Queue: task.QueueQueued, QueueRounds: 1},
				{Key: "docs", Status: goal.TaskWaiting, BlockedBy: []string{"api", "ui"}, WaitingOn: []string{"api", "ui"}, Branch: goal.Branch(id, "docs")},
			}, Queue: []string{"api", "ui"}, Planned: true, Proposals: []goal.Proposal{
				{Round: 1, Try: 1, Problem: "tasks[0].blocked_by: tasks api → ui → api form a cycle"},
				{Round: 1, Try: 2, Keys: []string{"api", "ui", "docs"}}}}, nil
		}
	}
	return goal.State{}, &task.Error{Code: task.CodeNotFound, Message: "no goal " + id}
}

type cliGoalTasks struct{}

func (cliGoalTasks) State(_ context.Context, id string) (task.State, error) {
	return task.State{TaskID: id, Status: task.StatusInProgress, CostUSD: 0.75}, nil
}

const goalYAML = `description: Add member counts
repo: /src/app
tasks:
  - key: api
    plan: &plan
      description: count members
      subtasks: [{subtask_id: "1", description: count, estimated_lines: 10}]
      acceptance_criteria: [counted]
      risk_level: low
  - key: ui
    plan: *plan
  - key: docs
    blocked_by: [api, ui]
    plan: *plan
`

// TestGoalCommands starts a goal from YAML and shows it through the API's
// own handlers; a cycle is refused before anything is sent.
func TestGoalCommands(t *testing.T) {
	g := &cliGoals{}
	api := httpapi.New(httpapi.Options{OpenName: "ana"})
	goals.Register(api, goals.Options{Goals: g, Tasks: cliGoalTasks{}})
	env := map[string]string{"AMPFLOW_API_URL": httpapitest.Serve(t, api)}

	r := run(t, strings.Replace(goalYAML, "    blocked_by: [api, ui]", "    blocked_by: [api, docs]", 1), env, nil, "goal", "start", "-f", "-")
	if r.code != ExitFailed || !strings.Contains(r.stderr, `tasks[2].blocked_by[1]: "docs" is the task itself`) || len(g.g) != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, goalYAML, env, nil, "goal", "start", "-f", "-")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	id := lines[len(lines)-1]
	if r.code != ExitOK || !goal.ValidID(id) || len(g.g) != 1 || g.g[0].Tasks[2].BlockedBy[1] != "ui" {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, "", env, nil, "goal", "show", id)
	for _, want := range []string{"goal " + id + ": running", "docs", "api, ui", "T-2026-007", "in_progress", "$1.50", "overlap: api and ui both change shared.go",
		"merging", "queued (1 rounds)", "merge queue of main: api, ui",
		"planner, round 1, answer 1: refused: tasks[0].blocked_by: tasks api → ui → api form a cycle", "planner, round 1, answer 2: proposed api, ui, docs"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	r = run(t, "", env, nil, "goal", "show", id, "-o", "json")
	var v goals.View
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.CostUSD != 1.5 || v.Tasks[2].WaitingOn[0] != "api" {
		t.Fatalf("json %v %+v\n%s", err, v, r.stderr)
	}
	if r := run(t, "", env, nil, "goal", "show", "G-ffffffff"); r.code != ExitFailed || !strings.Contains(r.stderr, "no goal") {
		t.Errorf("unknown goal: exit %d %s", r.code, r.stderr)
	}
	if r := run(t, "", env, nil, "goal", "show", "nope"); r.code != ExitUsage {
		t.Errorf("bad id: exit %d %s", r.code, r.stderr)
	}
}

// TestGoalExample: examples/goal.yaml is a valid goal (two tasks in
// parallel, then a join), and docs/goals.md shows it as it is.
func TestGoalExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "goal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := toJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	if js, err = absoluteRepos(js); err != nil {
		t.Fatal(err)
	}
	g, err := goal.Parse(js, "G-0000abcd", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Tasks) != 3 || len(g.Tasks[2].BlockedBy) != 2 {
		t.Errorf("tasks %+v", g.Tasks)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "goals.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(raw)+"```") {
		t.Error("docs/goals.md does not show examples/goal.yaml as it is")
	}
}

// TestGoalDraft starts the goal file docs/goals.md shows for a planner,
// with only a description and a repo: a server without a planner refuses
// it naming goals.planner, one with starts it planning.
func TestGoalDraft(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "goals.md"))
	if err != nil {
		t.Fatal(err)
	}
	const draft = "description: Show member counts on dials\nrepo: .\n"
	if !strings.Contains(string(doc), "```yaml\n"+draft+"```") {
		t.Fatal("docs/goals.md does not show the planner's goal file")
	}
	for _, planner := range []bool{false, true} {
		g := &cliGoals{}
		api := httpapi.New(httpapi.Options{OpenName: "ana"})
		goals.Register(api, goals.Options{Goals: g, Tasks: cliGoalTasks{}, Planner: planner})
		env := map[string]string{"AMPFLOW_API_URL": httpapitest.Serve(t, api)}
		r := run(t, draft, env, nil, "goal", "start", "-f", "-")
		if !planner {
			if r.code != ExitFailed || !strings.Contains(r.stderr, "goals.planner") || len(g.g) != 0 {
				t.Errorf("without a planner: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			continue
		}
		if r.code != ExitOK || len(g.g) != 1 || len(g.g[0].Tasks) != 0 || !filepath.IsAbs(g.g[0].Repo) {
			t.Errorf("with a planner: exit %d %+v\n%s%s", r.code, g.g, r.stdout, r.stderr)
		}
	}
}
