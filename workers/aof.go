package workers

import (
	"log/slog"

	"go.temporal.io/sdk/worker"

	"github.com/ampflow/ampflow/activities"
	aofapi "github.com/ampflow/ampflow/integrations/aof"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows/aof"
)

// registerAOF registers the AOF task workflow and its activities.
func registerAOF(w worker.Worker, o Options, parts *Parts) {
	w.RegisterWorkflowWithOptions(aof.TaskWorkflow, aof.RegisterOptions())
	w.RegisterActivity(&activities.AOF{Store: parts.Store, DataDir: o.Config.AOF.DataDir})
}

// addAOF serves AOF/1 on the API.
func addAOF(api *httpapi.Server, o Options, parts *Parts, log *slog.Logger) {
	if parts.Store == nil || parts.Tasks == nil || parts.Tasks.Temporal == nil {
		return
	}
	tasks := &aof.Client{Temporal: parts.Tasks.Temporal, TaskQueue: o.Config.Temporal.TaskQueue}
	aofapi.Register(api, tasks, parts.Store, log)
}
