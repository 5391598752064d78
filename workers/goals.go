package workers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/delivery"
	goalacts "github.com/ampflow/ampflow/activities/goal"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/dashboard"
	"github.com/ampflow/ampflow/integrations/goals"
	"github.com/ampflow/ampflow/integrations/httpapi"
	goalwf "github.com/ampflow/ampflow/workflows/goal"
)

// registerGoals registers the goal workflow and its activities: its
// tasks start through the task client, its planner (goals.planner) runs
// as the runners do.
func registerGoals(w worker.Worker, parts *Parts) {
	w.RegisterWorkflowWithOptions(goalwf.Goal, workflow.RegisterOptions{Name: goal.WorkflowType})
	acts := &goalacts.Goal{Store: parts.Store}
	if parts.Activities != nil {
		acts.Git, _ = parts.Activities.Git.(*activities.Git)
		acts.Pusher = parts.Activities.Pusher
		if d, ok := parts.Activities.Delivery.(*delivery.Delivery); ok && d.Planner.Runner != "" {
			acts.Planner = d
		}
	}
	if parts.Tasks != nil {
		acts.Tasks = goalwf.Tasks{Client: parts.Tasks}
	}
	w.RegisterActivity(acts)
}

// addGoals serves POST /v1/goals and GET /v1/goals/{id}.
func addGoals(api *httpapi.Server, o Options, parts *Parts, log *slog.Logger) {
	if parts.Tasks == nil || parts.Tasks.Temporal == nil {
		return
	}
	goals.Register(api, goals.Options{
		Goals: &goalwf.Client{Temporal: parts.Tasks.Temporal, TaskQueue: o.Config.Temporal.TaskQueue,
			PlannerRounds: o.Config.Goals.PlannerRounds},
		Planner: o.Config.Goals.Planner.On(),
		Tasks:   parts.Tasks,
		Logger:  log,
	})
}

// goalsPanel fills the dashboard's Goals page: a row per task of the
// newest goals, with its state, what it waits on and its cost.
type goalsPanel struct {
	goals *goalwf.Client
	tasks goals.Tasks
	log   *slog.Logger
}

// goalsListed bounds the goals the Goals page shows.
const goalsListed = 20

func (p goalsPanel) Table(ctx context.Context) (dashboard.Table, error) {
	ids, err := p.goals.List(ctx, goalsListed)
	if err != nil {
		return dashboard.Table{}, err
	}
	t := dashboard.Table{Columns: []string{"Goal", "Goal status", "Task", "State", "Task id", "Task status", "Waits on", "Queue", "Cost", "Started"}}
	for _, id := range ids {
		st, err := p.goals.State(ctx, id)
		if err != nil {
			t.Rows = append(t.Rows, []dashboard.Cell{{Text: id}, {Text: "unreadable: " + err.Error()}, {}, {}, {}, {}, {}, {}, {}})
			continue
		}
		v := goals.ViewOf(ctx, st, p.tasks, p.log)
		status := string(v.Status)
		if v.Reason != "" {
			status += ": " + v.Reason
		}
		if len(v.Queue) > 0 {
			status += " · merge queue of " + v.Target + ": " + strings.Join(v.Queue, ", ")
		}
		if len(v.Tasks) == 0 {
			// Planning, or its planner's graph was never taken: a row of
			// its own.
			t.Rows = append(t.Rows, []dashboard.Cell{{Text: fmt.Sprintf("%s · %s · $%.2f", v.Goal.ID, v.Goal.Description, v.CostUSD)},
				{Text: status}, {}, {}, {}, {}, {}, {}, {}, {Time: v.StartedAt}})
		}
		for i, tv := range v.Tasks {
			row := []dashboard.Cell{{}, {}, {Text: tv.Key}, {Text: string(tv.Status)}, {}, {Text: string(tv.TaskStatus)},
				{Text: strings.Join(tv.WaitingOn, ", ")}, {Text: tv.QueueText()}, {Text: fmt.Sprintf("$%.2f", tv.CostUSD)}, {Time: tv.StartedAt}}
			if i == 0 {
				row[0] = dashboard.Cell{Text: fmt.Sprintf("%s · %s · $%.2f", v.Goal.ID, v.Goal.Description, v.CostUSD)}
				row[1] = dashboard.Cell{Text: status}
			}
			if tv.TaskID != "" {
				row[4] = dashboard.Cell{Text: tv.TaskID, Href: "/tasks/" + tv.TaskID}
			}
			if len(tv.Overlaps) > 0 {
				var o []string
				for _, ov := range tv.Overlaps {
					o = append(o, "overlaps "+ov.With+": "+strings.Join(ov.Files, ", "))
				}
				row[6].Text = strings.TrimPrefix(row[6].Text+"; "+strings.Join(o, "; "), "; ")
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t, nil
}

// PlannerMode says how the worker runs the goals' planner, a line for
// what `ampflow dev` and `ampflow worker` print at start; none without a
// planner. A CLI that does not start, or a sandbox that cannot, is an
// error naming the key to change.
func PlannerMode(ctx context.Context, g config.Goals) ([][2]string, error) {
	p := g.Planner
	if !p.On() {
		return nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	version, err := delivery.CheckRunner(cctx, config.Agent{Mode: config.AgentModeRunner, Runner: p.Runner, Command: p.Command, Env: p.Env})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("goals.planner.command: the %s planner's CLI does not start (%v); install it or name its binary in goals.planner.command", p.Runner, err)
	}
	confined := "sandboxed"
	if p.Sandbox == config.SandboxOff {
		confined = "NOT sandboxed: goals.planner.sandbox is off, so the planner can read the worker's keys and database (docs/sandbox.md)"
	} else if err := runner.CheckSandbox(ctx, ""); err != nil {
		return nil, fmt.Errorf("goals.planner.sandbox: the planner runs in a sandbox, and %v; install bubblewrap, or set goals.planner.sandbox: off to run it unconfined (docs/sandbox.md)", err)
	}
	return [][2]string{{"planner", fmt.Sprintf("runner %s %s (timeout %s, idle %s, %d rounds), %s", p.Runner, version,
		task.FormatDuration(p.Timeout), task.FormatDuration(p.IdleTimeout), g.PlannerRounds, confined)}}, nil
}
