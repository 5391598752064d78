package aof

import (
	"slices"

	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// Owners are the agents a task belongs to: its assignee and the agent
// running it.
func Owners(t Task) []string {
	var out []string
	if t.Assignee != "" {
		out = append(out, t.Assignee)
	}
	if t.Status == StatusInProgress && t.Run != nil && t.Run.Status == RunRunning && t.Run.AgentID != t.Assignee {
		out = append(out, t.Run.AgentID)
	}
	return out
}

// Authorize refuses (forbidden) a message an agent sends about a task
// that is not its own: a status update only from the task's owners, a
// handoff reply only from them or the agent it is handed to, and a
// handoff.request (which writes the acceptance criteria the task is
// reviewed against) only from the parent's owners, never from the agent
// under review. Admins and coordinators (an empty in.Agent) may send
// any.
func Authorize(t Task, in MessageInput) error {
	a := in.Agent
	if a == "" {
		return nil
	}
	m := in.Message
	mine := slices.Contains(Owners(t), a)
	switch m.Type {
	case TypeStatusUpdate:
		if !mine {
			return refusal.New(task.CodeForbidden, "fromAgent: %s is neither the assignee of task %s nor the agent running it: its status is not %s's to update",
				a, t.TaskID, a)
		}
	case TypeHandoffRequest:
		if mine || (m.Handoff != nil && m.Handoff.ToAgent == a) {
			return refusal.New(task.CodeForbidden, "fromAgent: %s is the agent task %s is handed to: its handoff and acceptance criteria come from the side that hands it off",
				a, t.TaskID)
		}
		if !slices.Contains(in.ParentOwners, a) {
			return refusal.New(task.CodeForbidden, "fromAgent: %s is neither the assignee of the parent task nor the agent running it: only they hand off from it",
				a)
		}
	case TypeHandoffAccepted, TypeHandoffRejected:
		if !mine && (t.Handoff == nil || t.Handoff.ToAgent != a) {
			return refusal.New(task.CodeForbidden, "fromAgent: task %s is not handed to %s: only its agent answers its handoff", t.TaskID, a)
		}
	}
	return nil
}
