package workers

import (
	"log/slog"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/repomesh"
	"github.com/ampflow/ampflow/workflows/lease"
)

// registerLeases registers the lease workflow and, when the worker has
// the SSOT, its activity, which writes leases and their mesh events there.
func registerLeases(w worker.Worker, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(lease.Workflow, workflow.RegisterOptions{Name: lease.WorkflowType})
	rec, _ := acts.Store.(*activities.SSOT)
	if rec == nil {
		return
	}
	if store, ok := rec.Store.(activities.LeaseStore); ok {
		w.RegisterActivityWithOptions((&activities.Leases{Store: store}).LeaseChanged,
			activity.RegisterOptions{Name: lease.ActivityChanged})
	}
}

// addMesh adds the lease and mesh routes to the API.
func addMesh(api *httpapi.Server, parts *Parts, log *slog.Logger) {
	var store repomesh.Store
	if parts.Store != nil {
		store = parts.Store
	}
	var (
		leases repomesh.Leases
		tasks  repomesh.Tasks
	)
	if parts.Tasks != nil {
		leases = &lease.Client{Temporal: parts.Tasks.Temporal, TaskQueue: parts.Tasks.TaskQueue}
		tasks = parts.Tasks
	}
	repomesh.AddTo(api, repomesh.Options{Leases: leases, Store: store, Tasks: tasks, Log: log})
}
