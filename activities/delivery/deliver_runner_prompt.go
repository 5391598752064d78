package delivery

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
)

// runnerPrompt builds the user prompt and the system prompt of a run from
// the message: everything the agent needs, and the report ampflow reads.
func runnerPrompt(in activities.DeliverInput) (prompt, system string, err error) {
	m := in.Message
	var b strings.Builder
	switch p := m.Payload.(type) {
	case *amp.TaskDispatch:
		fmt.Fprintf(&b, "Task %s: %s\n", m.TaskID, p.Description)
		for _, s := range p.Subtasks {
			fmt.Fprintf(&b, "\nSubtask %s: %s\n", s.SubtaskID, s.Description)
		}
		writeList(&b, "Acceptance criteria", p.AcceptanceCriteria)
		writeList(&b, "Forbidden actions", p.ForbiddenActions)
		if len(p.TechConstraints) > 0 {
			c, _ := json.Marshal(p.TechConstraints)
			fmt.Fprintf(&b, "\nTechnical constraints: %s\n", c)
		}
		system = fmt.Sprintf("You are the executor of task %s, run by ampflow. Work only in the current directory, a git worktree on branch %s. "+
			"Commit your work to this branch with git; do not push and do not switch branches. "+
			"End your final message with a JSON object, and nothing after it: "+
			`{"criteria_met": [one of true, false or null per acceptance criterion, in order], "notes": ["..."], "summary": "..."}.`,
			m.TaskID, p.Branch)
	case *amp.ReviewRequest:
		fmt.Fprintf(&b, "Review the result of task %s: the commit checked out in the current directory (%s).\n", m.TaskID, in.Commit)
		if in.Description != "" {
			fmt.Fprintf(&b, "\nThe task: %s\n", in.Description)
		}
		writeList(&b, "Acceptance criteria", in.Criteria)
		if p.CoordinatorNotes != "" {
			fmt.Fprintf(&b, "\nNotes: %s\n", p.CoordinatorNotes)
		}
		fmt.Fprintf(&b, "\nRejections so far: %d. Diff: %s\n", p.RejectCount, p.DiffURL)
		system = fmt.Sprintf("You are the reviewer of task %s, run by ampflow. Read the code; change nothing. "+
			"End your final message with a JSON review_verdict, and nothing after it: "+
			`{"decision": "approved" | "approved_with_fix" | "rejected", "confidence": 0.0-1.0, `+
			`"criteria_results": [{"criterion": "...", "passed": true | false | null, "evidence": "..."} one per acceptance criterion], `+
			`"issues": [{"severity": "critical" | "major" | "minor", "file": "...", "line": 1, "description": "...", "suggested_fix": "..."}]}.`,
			m.TaskID)
	default:
		return "", "", fmt.Errorf("a runner takes task_dispatch and review_request, not %s (%s)", m.Type, m.MsgID)
	}
	return b.String(), system, nil
}

func writeList(b *strings.Builder, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", title)
	for i, it := range items {
		fmt.Fprintf(b, "%d. %s\n", i+1, it)
	}
}
