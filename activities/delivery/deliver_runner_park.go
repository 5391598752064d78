package delivery

import (
	"fmt"
	"path/filepath"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// parkPath is where the hook of a role's run on a task writes its park.
func parkPath(a activities.AgentDelivery, m amp.Message) string {
	return ParkFile(a.WorkDir, m.TaskID, m.To, a.Runner)
}

// ParkFile is where the hook of a run of role on taskID with the runner
// named runnerName writes its park, under the worker's data_dir: the API's
// hook route parks there too.
func ParkFile(dataDir, taskID string, role amp.Role, runnerName string) string {
	// One directory per task and role: a sandboxed run writes only its
	// own, and reads no other task's park.
	return filepath.Join(dataDir, "parks", taskID+"."+string(role), runnerName+".json")
}

// parkable gives a run whose hook is set the park file (an ACP agent's
// hook, run by the worker, gets it in its own environment).
func parkable(spec *runner.Spec, a activities.AgentDelivery, m amp.Message) {
	spec.ParkFile = parkPath(a, m)
	if spec.Runner != runner.ACP {
		spec.Env = append(spec.Env, activities.EnvParkFile+"="+spec.ParkFile)
	}
}

// resumed sets spec to resume a parked run with the admins' answer, or
// an interrupted one.
func resumed(spec *runner.Spec, r *activities.Resume) {
	if r.SessionID != "" {
		spec.SessionID = r.SessionID
	}
	if r.Interrupted {
		spec.Prompt = interruptedPrompt(r.By)
		return
	}
	spec.Prompt = resumePrompt(*r)
}

// resumePrompt tells a resumed agent what became of its parked call. Claude
// Code runs a deferred call again through its hook before it reads it;
// the others, and Claude Code's held calls, are asked to make it again.
func resumePrompt(r activities.Resume) string {
	by := r.By
	if by == "" {
		by = "the admins"
	}
	if r.Destination != "" {
		if r.Decision == "allow" {
			return fmt.Sprintf("ampflow: %s allowed your connection to %s, which was waiting for approval (%s), after it was refused. "+
				"Run the command that made it again now; then carry on with the task and end with your report as asked.", by, r.Destination, r.ToolCallID)
		}
		note := ""
		if r.Note != "" {
			note = ": " + r.Note
		}
		return fmt.Sprintf("ampflow: your connection to %s, which was waiting for approval (%s), was denied by %s%s. "+
			"Do not try to reach it again; carry on with the task without it and end with your report as asked.", r.Destination, r.ToolCallID, by, note)
	}
	if r.Decision == "allow" {
		return fmt.Sprintf("ampflow: %s allowed your tool call %s, which was waiting for approval. "+
			"If it has not run yet, make the same call again now, unchanged; then carry on with the task and end with your report as asked.", by, r.ToolCallID)
	}
	note := ""
	if r.Note != "" {
		note = ": " + r.Note
	}
	return fmt.Sprintf("ampflow: your tool call %s, which was waiting for approval, was denied by %s%s. "+
		"Do not make it again; carry on with the task without it and end with your report as asked.", r.ToolCallID, by, note)
}

// parkedError ends the delivery of a run that parked a tool call.
func parkedError(a activities.AgentDelivery, m amp.Message, out runner.Outcome, session string) error {
	p := activities.Parked{ToolCallID: out.Parked.ToolCallID, SessionID: session}
	msg := fmt.Sprintf("the %s runner (%s) parked on %s: tool call %s waits for the admins", m.To, a.Runner, m.MsgID, p.ToolCallID)
	return temporal.NewNonRetryableApplicationError(msg, activities.ErrParked, nil, p)
}
