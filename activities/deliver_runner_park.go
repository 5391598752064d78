package activities

import (
	"fmt"
	"path/filepath"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// ErrParked ends a runner's delivery whose tool call still waits for the
// admins past tools.ask_timeout: the CLI has stopped (Claude Code on its
// hook's "defer", the others stopped by the runner) and its session is
// kept. The detail is a Parked; the task waits for the call's decision
// without any process, then delivers again with DeliverInput.Resume.
const ErrParked = "RunnerParked"

// EnvParkFile names, in a runner's environment, the file the tool hook
// writes when it parks a call (runner.Spec.ParkFile).
const EnvParkFile = "AMPFLOW_PARK_FILE"

// Parked is the detail of an ErrParked error.
type Parked struct {
	ToolCallID string `json:"tool_call_id"`
	SessionID  string `json:"session_id,omitempty"`
}

// Resume runs a parked runner again once its tool call is answered: the
// session goes on, told the answer; the hook then finds the call decided.
type Resume struct {
	ToolCallID string `json:"tool_call_id"`
	// SessionID is the parked run's session; empty, the one kept on disk.
	SessionID string `json:"session_id,omitempty"`
	// Decision is allow or deny; By who answered, Note their note or why
	// the call was denied.
	Decision string `json:"decision"`
	By       string `json:"by,omitempty"`
	Note     string `json:"note,omitempty"`
}

// parkPath is where the hook of a role's run on a task writes its park.
func parkPath(a AgentDelivery, m amp.Message) string {
	return filepath.Join(a.WorkDir, "parks", m.TaskID+"."+string(m.To)+"."+a.Runner+".json")
}

// parkable gives a run whose hook is set the park file.
func parkable(spec *runner.Spec, a AgentDelivery, m amp.Message) {
	spec.ParkFile = parkPath(a, m)
	spec.Env = append(spec.Env, EnvParkFile+"="+spec.ParkFile)
}

// resumed sets spec to resume a parked run with the admins' answer.
func resumed(spec *runner.Spec, r *Resume) {
	if r.SessionID != "" {
		spec.SessionID = r.SessionID
	}
	spec.Prompt = resumePrompt(*r)
}

// resumePrompt tells a resumed agent what became of its parked call. Claude
// Code runs a deferred call again through its hook before it reads it;
// the others, and Claude Code's held calls, are asked to make it again.
func resumePrompt(r Resume) string {
	by := r.By
	if by == "" {
		by = "the admins"
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
func parkedError(a AgentDelivery, m amp.Message, out runner.Outcome, session string) error {
	p := Parked{ToolCallID: out.Parked.ToolCallID, SessionID: session}
	msg := fmt.Sprintf("the %s runner (%s) parked on %s: tool call %s waits for the admins", m.To, a.Runner, m.MsgID, p.ToolCallID)
	return temporal.NewNonRetryableApplicationError(msg, ErrParked, nil, p)
}
