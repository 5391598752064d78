package workers

import (
	"fmt"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/amp"

	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/toolcalls"
)

// addToolCalls serves the tool policy: POST /v1/tool-calls and the
// listing of a task's tool calls.
func addToolCalls(api *httpapi.Server, o Options, parts *Parts) error {
	pol, err := o.Config.ToolPolicy()
	if err != nil {
		return fmt.Errorf("tools.rules: %w", err)
	}
	opts := toolcalls.Options{Tasks: parts.Tasks, Policy: pol, AskTimeout: o.Config.Tools.AskTimeout,
		ParkTimeout: o.Config.Tools.ParkTimeout}
	if parts.Store != nil {
		opts.Store, opts.Repos = parts.Store, parts.Store
	}
	if dir := o.Config.DataDir; dir != "" {
		// The runs of this worker park where it watches.
		opts.Parks = func(taskID string, role amp.Role, cli string) string {
			return delivery.ParkFile(dir, taskID, role, cli)
		}
	}
	toolcalls.Register(api, opts)
	return nil
}
