package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// Client is the typed way in to task workflows, shared by the CLI, the
// HTTP API and the chat integrations. Its errors are *task.Error.
type Client struct {
	Temporal  client.Client
	TaskQueue string
	// Wait bounds how long an update waits for a worker; zero means 15s.
	Wait time.Duration
	// DecisionKey signs every answer Decide sends (decision.SignAnswer);
	// the workers take no answer without it. Secret.
	DecisionKey []byte
	// Recorder, with Policy (the workers' policy), gets a started task's
	// first write (FirstRecord) before Start answers: the task is in the
	// SSOT's reads as soon as its start is. Nil leaves the first write to
	// the workflow.
	Recorder activities.Recorder
	Policy   *task.Policy
	// Now is the clock of the heartbeat throttle; nil is time.Now.
	Now func() time.Time

	beats beatThrottle
}

// TaskSummary is one line of a task listing.
type TaskSummary struct {
	TaskID      string      `json:"task_id"`
	Status      task.Status `json:"status"`
	Risk        string      `json:"risk_level"`
	Repo        string      `json:"repo"`
	RejectCount int64       `json:"reject_count"`
	StartedAt   time.Time   `json:"started_at"`
	Running     bool        `json:"running"`
	// Origin is the tracker's item the task came from; absent for none.
	Origin *task.Origin `json:"origin,omitempty"`
}

func (c *Client) wait() time.Duration {
	if c.Wait > 0 {
		return c.Wait
	}
	return 15 * time.Second
}

// InvalidRecord turns amp's parse error into a task.Error naming the fields.
func InvalidRecord(err error) *task.Error {
	e := &task.Error{Code: task.CodeInvalid, Message: err.Error(), Err: err}
	var ve *amp.ValidationError
	var se *amp.SyntaxError
	switch {
	case errors.As(err, &ve):
		for _, f := range ve.Fields {
			e.Fields = append(e.Fields, amp.FieldError{Path: f.Path, Problem: f.Problem})
		}
		e.Message = "invalid AMP message: " + strings.ReplaceAll(ve.Error(), "\n", "; ")
	case errors.As(err, &se):
		e.Fields = []amp.FieldError{{Path: amp.RootPath, Problem: se.Error()}}
	}
	return e
}

// Submit hands an agent's message or ACK record to its task. A retried
// send has one effect (see SubmitUpdateID).
func (c *Client) Submit(ctx context.Context, raw []byte) (task.SubmitResult, error) {
	rec, err := amp.ParseRecord(raw)
	if err != nil {
		return task.SubmitResult{}, InvalidRecord(err)
	}
	taskID := ""
	if rec.Ack != nil {
		taskID = rec.Ack.TaskID
	} else {
		taskID = rec.Message.TaskID
	}
	var out task.SubmitResult
	a := AgentFrom(ctx)
	in := task.SubmitInput{Raw: json.RawMessage(raw), By: a.Name, Admin: a.Admin, Signed: decision.Signed{At: time.Now().UTC()}}
	if in.Signature, err = c.signCommand(taskID, task.UpdateSubmit, in.SignedAs); err != nil {
		return task.SubmitResult{}, err
	}
	id := SubmitUpdateID(rec)
	err = c.update(ctx, taskID, task.UpdateSubmit, id, in, &out)
	if rec.Message != nil && rec.Message.Type == amp.TypeTaskResult && noAnswer(err) && ctx.Err() == nil {
		// The task answers a result once its git check is done (Warnings);
		// a check that outlasts Wait (git retried) leaves the result taken
		// all the same, without them. A refusal is an answer, and comes
		// at once.
		if taken, ok := c.resultTaken(ctx, taskID, id, in, rec.ID()); ok {
			return taken, nil
		}
	}
	return out, err
}

// noAnswer reports whether err is an update that got no answer in time.
func noAnswer(err error) bool {
	var te *task.Error
	return err != nil && errors.As(err, &te) && te.Code == task.CodeUnavailable && (errors.Is(err, context.DeadlineExceeded) || isDeadline(err))
}

// resultTaken reports whether the submit update id, which did not answer
// in time, was accepted by the task all the same (sent again under its
// id, it is the same update), and then the answer without the check's
// warnings: the msg_id and the task's status.
func (c *Client) resultTaken(ctx context.Context, taskID, id string, in task.SubmitInput, msgID string) (task.SubmitResult, bool) {
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.Temporal.UpdateWorkflow(actx, client.UpdateWorkflowOptions{
		WorkflowID: task.WorkflowID(taskID), UpdateName: task.UpdateSubmit, UpdateID: id, Args: []any{in},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err != nil {
		return task.SubmitResult{}, false
	}
	st, err := c.State(ctx, taskID)
	if err != nil {
		return task.SubmitResult{}, false
	}
	return task.SubmitResult{MsgID: msgID, Status: st.Status}, true
}

// SubmitUpdateID is the update ID of a submission: the msg_id and a digest
// of the record's content. A resend of the same record has the same ID, so
// Temporal gives it the first send's answer and it has no second effect;
// another record under a used msg_id has another ID, so the task sees it
// and refuses it as a conflict.
func SubmitUpdateID(rec amp.Record) string {
	return rec.ID() + "#" + recordDigest(rec)
}

// State asks a task for its state; finished tasks answer too.
func (c *Client) State(ctx context.Context, taskID string) (task.State, error) {
	var st task.State
	if err := checkTaskID(taskID); err != nil {
		return st, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	v, err := c.Temporal.QueryWorkflow(ctx, task.WorkflowID(taskID), "", task.QueryState)
	if err != nil {
		return st, c.wrap(err, "reading task "+taskID)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decoding state of task %s: %w", taskID, err)
	}
	return st, nil
}

// List returns tasks, newest first, optionally only those in a status,
// from Temporal's visibility: a task in an agent's turn is listed as
// dispatched (task.AttrStatusOf).
func (c *Client) List(ctx context.Context, status task.Status, limit int) ([]TaskSummary, error) {
	q := fmt.Sprintf("WorkflowType = '%s'", task.WorkflowType)
	if status != "" {
		if !status.Valid() {
			return nil, &task.Error{Code: task.CodeInvalid, Message: fmt.Sprintf("status: unknown status %q", status),
				Fields: []amp.FieldError{{Path: "status", Problem: "unknown status"}}}
		}
		if task.AttrStatusOf(status) != status {
			return nil, &task.Error{Code: task.CodeInvalid, Message: fmt.Sprintf("status: %s is not in Temporal's visibility, where a task in an agent's turn is %s; the SSOT's list (GET /v1/tasks) has it", status, task.AttrStatusOf(status)),
				Fields: []amp.FieldError{{Path: "status", Problem: "not kept in visibility"}}}
		}
		q += " AND " + statusQuery(status)
	}
	var out []TaskSummary
	var token []byte
	for {
		resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return nil, c.wrap(err, "listing tasks")
		}
		for _, e := range resp.Executions {
			out = append(out, summarize(e))
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	// Visibility lists running tasks before ended ones; the whole list is
	// needed to put them in start order.
	slices.SortStableFunc(out, func(a, b TaskSummary) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.TaskID, a.TaskID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// update runs an update to completion and maps its refusal.
func (c *Client) update(ctx context.Context, taskID, name, id string, arg, out any) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	uctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	var err error
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		var h client.WorkflowUpdateHandle
		h, err = c.Temporal.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
			WorkflowID:   task.WorkflowID(taskID),
			UpdateName:   name,
			UpdateID:     id,
			Args:         []any{arg},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err == nil {
			err = h.Get(uctx, out)
		}
		// The workflow task that carried the update failed before it was
		// accepted (new events came in while it ran): the server dropped
		// the update, unapplied. Sent again under the same id it is applied
		// once.
		var notReady *serviceerror.WorkflowNotReady
		if !errors.As(err, &notReady) || time.Until(deadlineOf(uctx)) < delay {
			break
		}
		select {
		case <-uctx.Done():
		case <-time.After(delay):
		}
	}
	return c.wrapEnded(ctx, taskID, err, fmt.Sprintf("%s on task %s", name, taskID))
}

// wrapEnded is wrap for messages to a task: one that has ended answers
// task_ended naming its final status, rather than no such task.
func (c *Client) wrapEnded(ctx context.Context, taskID string, err error, op string) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		if e := c.ended(ctx, taskID, nf); e != nil {
			return e
		}
	}
	return c.wrap(err, op)
}

// wrap turns Temporal's errors into task.Errors a user can read.
func (c *Client) wrap(err error, op string) error { return WrapError(err, op, c.wait(), c.TaskQueue) }

// WrapError turns Temporal's errors into task.Errors a user can read: op
// names the call; wait and queue say, when no answer came, how long the
// call waited and which task queue's workers it waited for.
func WrapError(err error, op string, wait time.Duration, queue string) error {
	if err == nil {
		return nil
	}
	var te *task.Error
	if errors.As(err, &te) {
		return err
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		if e, ok := refusal.Of(app); ok {
			e.Err = err
			return e
		}
		return &task.Error{Code: task.CodeInternal, Message: op + ": " + app.Message(), Err: err}
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return &task.Error{Code: task.CodeNotFound, Message: op + ": no such task", Err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) || isDeadline(err) {
		return &task.Error{Code: task.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"%s: no answer within %s: is an ampflow worker running on task queue %q?", op, task.FormatDuration(wait), queue)}
	}
	var un *serviceerror.Unavailable
	if errors.As(err, &un) {
		return &task.Error{Code: task.CodeUnavailable, Message: op + ": Temporal is unavailable: " + un.Error(), Err: err}
	}
	return &task.Error{Code: task.CodeInternal, Message: op + ": " + err.Error(), Err: err}
}

func isDeadline(err error) bool {
	var de *serviceerror.DeadlineExceeded
	var ce *serviceerror.Canceled
	return errors.As(err, &de) || errors.As(err, &ce)
}

func summarize(e *workflowpb.WorkflowExecutionInfo) TaskSummary {
	s := TaskSummary{
		TaskID:  e.GetExecution().GetWorkflowId(),
		Running: e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
	}
	if t := e.GetStartTime(); t != nil {
		s.StartedAt = t.AsTime()
	}
	sa := e.GetSearchAttributes().GetIndexedFields()
	dc := converter.GetDefaultDataConverter()
	var str string
	if p, ok := sa[task.AttrStatus.GetName()]; ok && dc.FromPayload(p, &str) == nil {
		s.Status = task.Status(str)
	}
	if p, ok := sa[task.AttrRisk.GetName()]; ok && dc.FromPayload(p, &str) == nil {
		s.Risk = str
	}
	if p, ok := sa[task.AttrRepo.GetName()]; ok && dc.FromPayload(p, &str) == nil {
		s.Repo = str
	}
	var n int64
	if p, ok := sa[task.AttrRejectCount.GetName()]; ok && dc.FromPayload(p, &n) == nil {
		s.RejectCount = n
	}
	switch {
	case s.Running || s.Status.Terminal():
	case e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		// A task that ends done does not write AmpStatus again: its
		// completion says it.
		s.Status = task.StatusDone
	default:
		// The workflow ended without saying so (failed or was terminated
		// from Temporal itself).
		s.Status = task.StatusTerminated
	}
	return s
}

// statusQuery is the visibility query for the tasks summarize reads as
// status: a completed task whose AmpStatus is not terminated is done, and
// one that ended otherwise without a terminal AmpStatus is terminated.
func statusQuery(status task.Status) string {
	switch status {
	case task.StatusDone:
		return "(AmpStatus = 'done' OR (ExecutionStatus = 'Completed' AND AmpStatus != 'terminated'))"
	case task.StatusTerminated:
		return "(AmpStatus = 'terminated' OR (ExecutionStatus NOT IN ('Running', 'Completed') AND AmpStatus != 'done'))"
	}
	return fmt.Sprintf("AmpStatus = '%s' AND ExecutionStatus = 'Running'", status)
}

// deadlineOf is ctx's deadline, or a time far ahead when it has none.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Hour)
}
