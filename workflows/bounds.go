package workflows

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// Bounds on agents' escalations, which reach admins and are kept in the
// task's state and history.
const (
	// MaxEscalationText bounds each text field of an agent's escalation,
	// in bytes.
	MaxEscalationText = 8 << 10
	// MaxAgentEscalations is how many escalations agents may raise on one
	// task within EscalationWindow; more are refused until the oldest
	// leaves the window.
	MaxAgentEscalations = 20
	// EscalationWindow is the sliding window of MaxAgentEscalations.
	EscalationWindow = time.Hour
)

// Bounds on the input one task takes over its life, whatever its runs:
// each submission and heartbeat is kept in the workflow's history, which
// Temporal caps (50 MB), so no agent may grow it without end.
const (
	// MaxTaskSubmissions is how many messages and ACKs a task takes;
	// more are refused with task.CodeInputBudget, before they reach the
	// history.
	MaxTaskSubmissions = 2000
	// MaxTaskHeartbeats is how many heartbeats a task takes; more are
	// ignored (a signal cannot be refused), so a task that needs more
	// times out on heartbeats and asks an admin.
	MaxTaskHeartbeats = 20000
)

// The budgets the workflow applies: the constants, lowered by tests.
var (
	maxTaskSubmissions = MaxTaskSubmissions
	maxTaskHeartbeats  = MaxTaskHeartbeats
)

// checkBudget refuses a submission beyond MaxTaskSubmissions.
func (t *taskRun) checkBudget() error {
	if t.Submissions < maxTaskSubmissions {
		return nil
	}
	return refusal.New(task.CodeInputBudget, "task %s has taken its %d agent messages and ACKs, the most one task takes; an admin may cancel it or start another",
		t.In.TaskID, maxTaskSubmissions)
}

// checkEscalation refuses an agent's escalation with a text field over
// MaxEscalationText, or one beyond MaxAgentEscalations in the window
// ending now. It reads the state and never changes it.
func (t *taskRun) checkEscalation(ctx workflow.Context, m amp.Message) error {
	e := m.Escalation()
	if e == nil {
		return nil
	}
	var problems []amp.FieldError
	over := func(path string, n int) {
		if n > MaxEscalationText {
			problems = append(problems, amp.FieldError{Path: path, Problem: fmt.Sprintf("%d bytes, at most %d", n, MaxEscalationText)})
		}
	}
	over("payload.description", len(e.Description))
	for i, s := range e.SuggestedActions {
		over(fmt.Sprintf("payload.suggested_actions[%d]", i), len(s))
	}
	for i, s := range e.AffectedMsgs {
		over(fmt.Sprintf("payload.affected_msgs[%d]", i), len(s))
	}
	if b, err := json.Marshal(e.SystemStateSnapshot); err == nil {
		over("payload.system_state_snapshot", len(b))
	}
	if len(problems) > 0 {
		return refusal.Fields(problems, "%s", refusal.Lines(problems))
	}
	now := workflow.Now(ctx)
	recent := t.recentEscalations(now)
	if len(recent) >= MaxAgentEscalations {
		next := recent[0].Add(EscalationWindow)
		t.log.Warn("agent escalation refused: too many this hour", "msg_id", m.MsgID, "from", m.From,
			"count", len(recent), "next_at", next)
		return refusal.New(task.CodeRateLimited, "escalation refused: task %s has had %d agent escalations in the last %s (at most %d); the next is taken from %s",
			t.In.TaskID, len(recent), EscalationWindow, MaxAgentEscalations, next.UTC().Format(time.RFC3339))
	}
	return nil
}

// recentEscalations returns the times of the agent escalations accepted
// within EscalationWindow before now, oldest first.
func (t *taskRun) recentEscalations(now time.Time) []time.Time {
	for i, at := range t.AgentEscalations {
		if now.Sub(at) < EscalationWindow {
			return t.AgentEscalations[i:]
		}
	}
	return nil
}

// countEscalation remembers an accepted agent escalation, forgetting those
// that have left the window.
func (t *taskRun) countEscalation(ctx workflow.Context) {
	now := workflow.Now(ctx)
	t.AgentEscalations = append(append([]time.Time(nil), t.recentEscalations(now)...), now)
}

// boundNote cuts a heartbeat note that reached the workflow over
// task.MaxHeartbeatNote (clients refuse those; a signal has no validator).
func boundNote(note string) string {
	if len(note) <= task.MaxHeartbeatNote {
		return note
	}
	cut := task.MaxHeartbeatNote
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut]
}
