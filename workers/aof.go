package workers

import (
	"log/slog"

	"go.temporal.io/sdk/worker"

	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/config"
	aofapi "github.com/ampflow/ampflow/integrations/aof"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows/aof"
	"github.com/ampflow/ampflow/workflows/lease"
)

// registerAOF registers the AOF task workflow and its activities.
func registerAOF(w worker.Worker, o Options, parts *Parts) {
	w.RegisterWorkflowWithOptions(aof.TaskWorkflow, aof.RegisterOptions())
	w.RegisterWorkflowWithOptions(aof.AgentReviewWorkflow, aof.RegisterAgentReviewOptions())
	acts := &aofacts.AOF{Store: parts.Store, DataDir: o.Config.AOF.DataDir}
	if parts.export != nil {
		acts.Written = parts.export.mark
	}
	w.RegisterActivity(acts)
	leases := &aofacts.AOFLeases{}
	if parts.Tasks != nil && parts.Tasks.Temporal != nil {
		leases.Leases = aofLeases{&lease.Client{Temporal: parts.Tasks.Temporal, TaskQueue: o.Config.Temporal.TaskQueue}}
	}
	w.RegisterActivity(leases)
}

// addAOF serves AOF/1 on the API.
func addAOF(api *httpapi.Server, o Options, parts *Parts, log *slog.Logger) {
	if parts.Store == nil || parts.Tasks == nil || parts.Tasks.Temporal == nil {
		return
	}
	tasks := &aof.Client{Temporal: parts.Tasks.Temporal, TaskQueue: o.Config.Temporal.TaskQueue}
	if o.Config.AOF.Review == config.AOFReviewAgent {
		tasks.Reviewer = &aof.AgentReviewer{Repo: o.Config.AOF.Repo, Branch: o.Config.AOF.Branch}
	}
	events := &aofacts.AOFEventLog{Store: parts.Store, DataDir: o.Config.AOF.DataDir}
	aofapi.Register(api, tasks, parts.Store, aofapi.Options{Events: events, DataDir: o.Config.AOF.DataDir, Log: log})
}
