package demo

import (
	"fmt"

	"github.com/ampflow/ampflow/amp"
)

// step records what an actor did and, in text mode, narrates it on one
// line: role, action, msg_id, a note, and the task's status when taken.
func (r *run) step(role amp.Role, action, msgID, note string) {
	s := Step{At: r.o.Now(), Role: role, Action: action, MsgID: msgID, Status: r.status}
	r.steps = append(r.steps, s)
	if r.o.JSON {
		return
	}
	line := fmt.Sprintf("  %-11s %s", role, action)
	if msgID != "" {
		line += " " + msgID
	}
	if note != "" {
		line += " (" + note + ")"
	}
	if s.Status != "" {
		line += " [task " + string(s.Status) + "]"
	}
	fmt.Fprintln(r.o.Out, line)
}

// say narrates something that is not a step.
func (r *run) say(format string, args ...any) {
	if r.o.JSON {
		return
	}
	fmt.Fprintf(r.o.Out, format+"\n", args...)
}

func (r *run) report(s Summary) {
	if r.o.JSON {
		return
	}
	r.say("\n%s %s: %d rounds, reject_count %d", s.TaskID, s.Status, s.Rounds, s.RejectCount)
	r.say("messages, in order:")
	for _, id := range s.MsgIDs {
		r.say("  %s", id)
	}
}
