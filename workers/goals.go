package workers

import (
	"log/slog"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	goalacts "github.com/ampflow/ampflow/activities/goal"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/integrations/goals"
	"github.com/ampflow/ampflow/integrations/httpapi"
	goalwf "github.com/ampflow/ampflow/workflows/goal"
)

// registerGoals registers the goal workflow and its activities: its
// tasks start through the task client.
func registerGoals(w worker.Worker, parts *Parts) {
	w.RegisterWorkflowWithOptions(goalwf.Goal, workflow.RegisterOptions{Name: goal.WorkflowType})
	acts := &goalacts.Goal{Store: parts.Store}
	if parts.Activities != nil {
		acts.Git, _ = parts.Activities.Git.(*activities.Git)
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
		Goals:  &goalwf.Client{Temporal: parts.Tasks.Temporal, TaskQueue: o.Config.Temporal.TaskQueue},
		Tasks:  parts.Tasks,
		Logger: log,
	})
}
