package workflows

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// Decide applies an admin's choice to a decision of subject: a task, or
// any other workflow that embeds the decision engine (a gate, a lease),
// whose workflow id is the subject.
//
// It signs the answer with the decision key, as of now: every channel
// (the API and through it the CLI, the chat bots, the dashboard) answers
// through here.
func (c *Client) Decide(ctx context.Context, subject string, in decision.Answer) (task.DecideResult, error) {
	var out task.DecideResult
	if len(c.DecisionKey) == 0 {
		return out, &task.Error{Code: task.CodeInternal, Message: "answering " + in.DecisionID + ": this process has no decision key (auth.decision_key)"}
	}
	in.At = time.Now().UTC()
	in.Signature = decision.SignAnswer(c.DecisionKey, subject, in)
	if task.ValidID(subject) {
		err := c.update(ctx, subject, task.UpdateDecide, "", in, &out)
		return out, err
	}
	if err := decision.CheckSubject(subject); err != nil {
		return out, &task.Error{Code: task.CodeInvalid, Message: err.Error(),
			Fields: []amp.FieldError{{Path: "subject", Problem: err.Error()}}}
	}
	uctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	op := fmt.Sprintf("%s on %s", task.UpdateDecide, subject)
	h, err := c.Temporal.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID:   subject,
		UpdateName:   task.UpdateDecide,
		Args:         []any{in},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(uctx, &out)
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return out, &task.Error{Code: task.CodeFinished, Message: op + ": " + subject + " has ended", Err: err}
	}
	return out, c.wrap(err, op)
}

// Cancel ends a task at a coordinator's request, signed with the
// decision key as Decide signs answers: the task takes no other.
func (c *Client) Cancel(ctx context.Context, taskID string, in task.CancelInput) (task.ChangeResult, error) {
	var out task.ChangeResult
	in.At = time.Now().UTC()
	sig, err := c.signCommand(taskID, task.UpdateCancel, in.SignedAs)
	if err != nil {
		return out, err
	}
	in.Signature = sig
	err = c.update(ctx, taskID, task.UpdateCancel, "", in, &out)
	return out, err
}

// Replan replaces a task's remaining subtasks, signed as Cancel.
func (c *Client) Replan(ctx context.Context, taskID string, in task.ReplanInput) (task.ChangeResult, error) {
	var out task.ChangeResult
	in.At = time.Now().UTC()
	sig, err := c.signCommand(taskID, task.UpdateReplan, in.SignedAs)
	if err != nil {
		return out, err
	}
	in.Signature = sig
	err = c.update(ctx, taskID, task.UpdateReplan, "", in, &out)
	return out, err
}

// signCommand signs a decisive command to subject (its SignedAs answer)
// with the decision key.
func (c *Client) signCommand(subject, command string, signedAs func() (decision.Answer, error)) (string, error) {
	if len(c.DecisionKey) == 0 {
		return "", &task.Error{Code: task.CodeInternal, Message: command + " of " + subject + ": this process has no decision key (auth.decision_key)"}
	}
	a, err := signedAs()
	if err != nil {
		return "", &task.Error{Code: task.CodeInternal, Message: "signing " + command + " of " + subject, Err: err}
	}
	return decision.SignAnswer(c.DecisionKey, subject, a), nil
}
