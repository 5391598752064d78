package goal

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/delivery"
)

// fakePlanner answers each run with text and keeps the runs.
type fakePlanner struct {
	text string
	runs []delivery.PlanRun
}

func (f *fakePlanner) Plan(_ context.Context, in delivery.PlanRun) (delivery.PlanOutcome, error) {
	f.runs = append(f.runs, in)
	return delivery.PlanOutcome{Text: f.text, SessionID: "s-1", CostUSD: 0.25}, nil
}

const planTask = `{"key": "%s", "blocked_by": [%s], "plan": {"description": "do it", "risk_level": "low",
	"subtasks": [{"subtask_id": "S1", "description": "do it", "estimated_lines": 5}], "acceptance_criteria": ["done"]}}`

func planned(key, blockedBy string) string {
	return strings.Replace(strings.Replace(planTask, "%s", key, 1), "%s", blockedBy, 1)
}

func TestGoalPlan(t *testing.T) {
	in := PlanInput{GoalID: "G-0000abcd", Description: "ship it", Repo: "/src/app", Target: "main", Head: "0123456789abcdef"}
	cases := []struct {
		name, text string
		problem    string // empty: a graph taken
	}{
		{"Graph", "The graph:\n```json\n{\"tasks\": [" + planned("api", "") + ", " + planned("ui", `"api"`) + "]}\n```", ""},
		{"Cycle", `{"tasks": [` + planned("a", `"b"`) + ", " + planned("b", `"a"`) + "]}", "tasks[0].blocked_by: tasks a → b → a form a cycle"},
		{"UnknownBlocker", `{"tasks": [` + planned("a", `"zz"`) + "]}", `tasks[0].blocked_by[0]: "zz" names no task of the goal`},
		{"NoGraph", "I could not decide.", `no JSON object with "tasks"`},
		{"NotTheGraph", `Done. {"criteria_met": [true]}`, `no JSON object with "tasks"`},
		{"OtherRepo", `{"tasks": [` + strings.Replace(planned("a", ""), `"plan": {`, `"plan": {"repo": "/etc", `, 1) + "]}",
			`tasks[0].plan.repo: is "/etc": a planner's task works in the goal's repository`},
		{"OtherBranch", `{"tasks": [` + strings.Replace(planned("a", ""), `"plan": {`, `"plan": {"branch": "release", `, 1) + "]}",
			`tasks[0].plan.branch: is "release": a planner's task works on goal/G-0000abcd/a`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &fakePlanner{text: c.text}
			g := &Goal{Planner: p}
			out, err := g.GoalPlan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if out.Session != "s-1" || out.CostUSD != 0.25 {
				t.Errorf("session %q cost %v", out.Session, out.CostUSD)
			}
			if c.problem != "" {
				if out.Goal != nil || !strings.Contains(out.Problem, c.problem) {
					t.Fatalf("problem %q, goal %v; want %q", out.Problem, out.Goal, c.problem)
				}
				return
			}
			if out.Problem != "" || out.Goal == nil {
				t.Fatalf("problem %q", out.Problem)
			}
			gl := out.Goal
			if gl.ID != in.GoalID || gl.Description != "ship it" || gl.Repo != "/src/app" || gl.Target != "main" || len(gl.Tasks) != 2 {
				t.Fatalf("goal %+v", gl)
			}
			if p := gl.Tasks[1].Plan; p.Repo != "/src/app" || p.Branch != "goal/G-0000abcd/ui" {
				t.Errorf("ui's plan %+v", p)
			}
			if !strings.Contains(out.Graph, `"tasks"`) {
				t.Errorf("graph %q", out.Graph)
			}
		})
	}
}

// TestGoalPlanTurns: a new session is told the goal and the checkout; a
// resumed one only why its last graph was not taken.
func TestGoalPlanTurns(t *testing.T) {
	p := &fakePlanner{text: "no graph"}
	g := &Goal{Planner: p}
	in := PlanInput{GoalID: "G-0000abcd", Description: "ship the billing page", Repo: "/src/app", Target: "main", Head: "0123456789abcdef"}
	if _, err := g.GoalPlan(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	in.Session, in.Feedback = "s-1", "Your graph was refused:\ntasks[0].blocked_by: tasks a → b → a form a cycle"
	if _, err := g.GoalPlan(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	first, second := p.runs[0], p.runs[1]
	if first.Subject != "goal-G-0000abcd" || first.Commit != in.Head || first.SessionID != "" ||
		!strings.Contains(first.Prompt, "ship the billing page") || !strings.Contains(first.System, "0123456789ab") ||
		!strings.Contains(first.System, `"blocked_by"`) {
		t.Errorf("first run %+v", first)
	}
	if second.SessionID != "s-1" || strings.Contains(second.Prompt, "ship the billing page") ||
		!strings.Contains(second.Prompt, "tasks a → b → a form a cycle") {
		t.Errorf("second run %+v", second)
	}
}

// TestGoalPlanNoPlanner: a worker without a planner refuses for good.
func TestGoalPlanNoPlanner(t *testing.T) {
	_, err := (&Goal{}).GoalPlan(context.Background(), PlanInput{GoalID: "G-0000abcd"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrNoPlanner || !app.NonRetryable() || !strings.Contains(err.Error(), "goals.planner") {
		t.Fatalf("err %v", err)
	}
}

func TestGraphOf(t *testing.T) {
	graph := `{"tasks": [{"key": "a", "plan": {"subtasks": [{"subtask_id": "1"}]}}]}`
	tests := []struct {
		name, text, want string
	}{
		{"Alone", graph, graph},
		{"AfterProse", "Here is the graph:\n" + graph, graph},
		{"LastOfTwo", `{"tasks": []} then ` + graph + ` and {"note": 1}`, graph},
		{"UnbalancedBefore", strings.Repeat("{", 5000) + " " + graph, graph},
		// A long message: only its last maxGraphText bytes are read.
		{"LongProse", strings.Repeat(`{"x": [`, 100000) + "\n" + graph, graph},
		{"None", `{"note": "no graph"}`, ""},
		{"TooFarBack", graph + strings.Repeat(" ", maxGraphText), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := graphOf(tt.text)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("graphOf = %s, want none", got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("graphOf = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
