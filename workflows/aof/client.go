package aof

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// Client starts AOF task workflows and hands them messages; the HTTP API
// and the CLI use it.
type Client struct {
	Temporal  client.Client
	TaskQueue string
	// Wait bounds each call; zero is 30 seconds.
	Wait time.Duration
	// Reviewer, when set (aof.review: agent), has the tasks it creates
	// reviewed by the AMP reviewer agent.
	Reviewer *AgentReviewer
	// DecisionKey signs dispatches and session ends (auth.decision_key);
	// the workflow takes no other.
	DecisionKey []byte
}

func (c *Client) wait() time.Duration {
	if c.Wait > 0 {
		return c.Wait
	}
	return 30 * time.Second
}

// Create starts the workflow of a new task and returns it once saved. A
// task id used before, even by a task that is done, is a conflict.
func (c *Client) Create(ctx context.Context, t Task) (Task, error) {
	ctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	_, err := c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       WorkflowID(t.TaskID),
		TaskQueue:                                c.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, WorkflowType, Input{Task: t, Reviewer: c.Reviewer})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return Task{}, &task.Error{Code: task.CodeConflict, Message: "AOF task " + t.TaskID + " exists already", Err: err}
	}
	if err != nil {
		return Task{}, c.wrap(err, "creating AOF task "+t.TaskID)
	}
	var out Result
	if err := c.update(ctx, t.TaskID, UpdateSync, SyncInput{}, &out); err != nil {
		return Task{}, err
	}
	return out.Task, nil
}

// Message hands a valid message to its task, signed with the decision
// key with who sent it.
func (c *Client) Message(ctx context.Context, in MessageInput) (Result, error) {
	var out Result
	in.At = time.Now().UTC()
	sig, err := c.sign(in.Message.TaskID, UpdateMessage, in.SignedAs)
	if err != nil {
		return out, err
	}
	in.Signature = sig
	err = c.update(ctx, in.Message.TaskID, UpdateMessage, in, &out)
	return out, err
}

// Dispatch starts a run of a ready task.
func (c *Client) Dispatch(ctx context.Context, taskID string, in DispatchInput) (Result, error) {
	var out Result
	in.At = time.Now().UTC()
	sig, err := c.sign(taskID, UpdateDispatch, in.SignedAs)
	if err != nil {
		return out, err
	}
	in.Signature = sig
	err = c.update(ctx, taskID, UpdateDispatch, in, &out)
	return out, err
}

// Heartbeat renews the running agent's heartbeat.
func (c *Client) Heartbeat(ctx context.Context, taskID string, in HeartbeatInput) (Result, error) {
	var out Result
	err := c.update(ctx, taskID, UpdateHeartbeat, in, &out)
	return out, err
}

// SessionEnd applies a task's pending run result.
func (c *Client) SessionEnd(ctx context.Context, taskID string, in SessionEndInput) (Result, error) {
	var out Result
	in.At = time.Now().UTC()
	sig, err := c.sign(taskID, UpdateSessionEnd, in.SignedAs)
	if err != nil {
		return out, err
	}
	in.Signature = sig
	err = c.update(ctx, taskID, UpdateSessionEnd, in, &out)
	return out, err
}

// sign signs a command to the task's workflow with the decision key.
func (c *Client) sign(taskID, command string, signedAs func() (decision.Answer, error)) (string, error) {
	if len(c.DecisionKey) == 0 {
		return "", &task.Error{Code: task.CodeInternal, Message: command + " on AOF task " + taskID + ": this process has no decision key (auth.decision_key)"}
	}
	a, err := signedAs()
	if err != nil {
		return "", &task.Error{Code: task.CodeInternal, Message: "signing " + command + " on AOF task " + taskID, Err: err}
	}
	return decision.SignAnswer(c.DecisionKey, WorkflowID(taskID), a), nil
}

func (c *Client) update(ctx context.Context, taskID, name string, arg, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	h, err := c.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   WorkflowID(taskID),
		UpdateName:   name,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, out)
	}
	return c.wrap(err, fmt.Sprintf("%s on AOF task %s", name, taskID))
}

// ErrEnded marks a call to a task whose workflow has ended (the task is
// done).
var ErrEnded = errors.New("the AOF task's workflow has ended")

// wrap turns Temporal's errors into task.Errors a user can read, as the
// task client does, except that a workflow not found is a task not found.
func (c *Client) wrap(err error, op string) error {
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return &task.Error{Code: CodeTaskNotFound, Message: op + ": no such running task", Err: errors.Join(ErrEnded, err)}
	}
	return workflows.WrapError(err, op, c.wait(), c.TaskQueue)
}
