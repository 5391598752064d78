// Package notify holds the notices to admins: what a workflow tells the
// chat adapters, the dashboard and any other Notifier about decisions and
// status changes. It imports none of the task's activities, so every
// channel can use it.
package notify

import (
	"context"
	"errors"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// Notifier tells admins about decisions and status changes.
type Notifier interface {
	Notify(ctx context.Context, in Input) error
}

// Notifiers sends every notice to each of its notifiers (Slack, Telegram).
// Each notifier must skip what it already posted, since a failure of one
// retries the notice for all.
type Notifiers []Notifier

// Notify implements Notifier.
func (ns Notifiers) Notify(ctx context.Context, in Input) error {
	var errs []error
	for _, n := range ns {
		if err := n.Notify(ctx, in); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Event says what a notice is about.
type Event string

// Notice events.
const (
	DecisionOpened Event = "decision_opened"
	DecisionClosed Event = "decision_closed"
	Status         Event = "status"
	Escalation     Event = "escalation" // an escalation that asks nothing
	// DecisionProgress: an approval was counted; the quorum is not
	// reached yet. The decision carries its approvals.
	DecisionProgress Event = "decision_progress"
	// DecisionReminder: nobody has answered within remind_after; the
	// decision is posted again on every channel.
	DecisionReminder Event = "decision_reminder"
	// DecisionEscalated: nobody has answered within escalate_after;
	// the admins_escalation group of each channel is added.
	DecisionEscalated Event = "decision_escalated"
)

// Input is one notice to admins.
type Input struct {
	TaskID   string             `json:"task_id"`
	Event    Event              `json:"event"`
	Status   task.Status        `json:"status"`
	Decision *decision.Decision `json:"decision,omitempty"`
	Outcome  *decision.Outcome  `json:"outcome,omitempty"`
	Message  *amp.Message       `json:"message,omitempty"`
	Text     string             `json:"text,omitempty"`
}

// Result is empty; it exists so fields can be added.
type Result struct{}
