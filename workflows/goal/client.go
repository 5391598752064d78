package goal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// Client starts goal workflows and reads their state; the HTTP API uses
// it. Its errors are *task.Error.
type Client struct {
	Temporal  client.Client
	TaskQueue string
	// Wait bounds each call; zero is 15 seconds.
	Wait time.Duration
	// PlannerRounds is the planner rounds of a goal started without
	// tasks (goals.planner_rounds); zero is DefaultPlannerRounds.
	PlannerRounds int
}

func (c *Client) wait() time.Duration {
	if c.Wait > 0 {
		return c.Wait
	}
	return 15 * time.Second
}

// Start starts the workflow of a checked goal; its id must be free. A
// goal without tasks is a draft (goal.CheckDraft), whose graph the
// planner proposes.
func (c *Client) Start(ctx context.Context, g goal.Goal, coordinator string) error {
	check := goal.Check
	if len(g.Tasks) == 0 {
		check = goal.CheckDraft
	}
	if err := check(g); err != nil {
		return invalid(err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	_, err := c.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                                       WorkflowID(g.ID),
		TaskQueue:                                c.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, goal.WorkflowType, Input{Goal: g, Coordinator: coordinator, PlannerRounds: c.PlannerRounds})
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return &task.Error{Code: task.CodeConflict, Message: "goal " + g.ID + " exists already", Err: err}
	}
	return workflows.WrapError(err, "starting goal "+g.ID, c.wait(), c.TaskQueue)
}

// State reads a goal's state.
func (c *Client) State(ctx context.Context, id string) (goal.State, error) {
	var st goal.State
	if !goal.ValidID(id) {
		return st, &task.Error{Code: task.CodeInvalid, Message: fmt.Sprintf("goal id %q is not G- and eight hex digits", id),
			Fields: []amp.FieldError{{Path: "id", Problem: "must be G- and eight hex digits"}}}
	}
	ctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	v, err := c.Temporal.QueryWorkflow(ctx, WorkflowID(id), "", goal.QueryState)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return st, &task.Error{Code: task.CodeNotFound, Message: "no goal " + id, Err: err}
	}
	if err != nil {
		return st, workflows.WrapError(err, "reading goal "+id, c.wait(), c.TaskQueue)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decoding the state of goal %s: %w", id, err)
	}
	return st, nil
}

// List returns the ids of the newest goals, newest first, at most limit,
// from Temporal's visibility.
func (c *Client) List(ctx context.Context, limit int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.wait())
	defer cancel()
	resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowType = '%s'", goal.WorkflowType), PageSize: int32(limit)})
	if err != nil {
		return nil, workflows.WrapError(err, "listing goals", c.wait(), c.TaskQueue)
	}
	var ids []string
	seen := map[string]bool{}
	for _, e := range resp.Executions {
		id := strings.TrimPrefix(e.GetExecution().GetWorkflowId(), "goal-")
		if goal.ValidID(id) && !seen[id] && len(ids) < limit {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// invalid turns a goal's field errors into a task.Error naming them.
func invalid(err error) *task.Error {
	e := &task.Error{Code: task.CodeInvalid, Message: "invalid goal: " + err.Error(), Err: err}
	var ve *amp.ValidationError
	if errors.As(err, &ve) {
		e.Fields = ve.Fields
		e.Message = "invalid goal: " + joinFields(ve.Fields)
	}
	return e
}

func joinFields(fs []amp.FieldError) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += "; "
		}
		s += f.String()
	}
	return s
}

// Tasks is the goal's activities' way to the tasks (goalacts.Tasks): it
// starts them with the task client and waits on their workflows.
type Tasks struct {
	Client *workflows.Client
}

// StartNext starts a task under the year's next free id.
func (t Tasks) StartNext(ctx context.Context, in task.Input, year int) (string, error) {
	return t.Client.StartNext(ctx, in, year)
}

// Steer tells a task of a message for its agent.
func (t Tasks) Steer(ctx context.Context, taskID string, in task.SteerInput) error {
	return t.Client.Steer(ctx, taskID, in)
}

// Wait blocks until task taskID ends. A start the task refused ends it
// terminated, with the refusal as its reason.
func (t Tasks) Wait(ctx context.Context, taskID string) (task.Result, error) {
	var r task.Result
	err := t.Client.Temporal.GetWorkflow(ctx, task.WorkflowID(taskID), "").Get(ctx, &r)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == task.ErrRefused {
		var ref task.Refusal
		_ = app.Details(&ref)
		return task.Result{TaskID: taskID, Status: task.StatusTerminated, Reason: ref.Reason}, nil
	}
	if err != nil {
		return r, err
	}
	return r, nil
}
