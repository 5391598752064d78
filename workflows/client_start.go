package workflows

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// Start starts a task workflow; the task id must be free. A start under
// the same RequestKey as the one that started the task answers as that
// start did.
func (c *Client) Start(ctx context.Context, in task.Input) error {
	if err := checkTaskID(in.TaskID); err != nil {
		return err
	}
	if err := CheckDispatches(in, time.Now()); err != nil {
		return err
	}
	req, err := newStartRequest(in)
	if err != nil {
		return err
	}
	return c.start(ctx, in, req)
}

// startStatus is the AmpStatus a task starts with: dispatched when the
// shared policy approves its plan without an admin (the task goes straight
// to its agents, and its visibility row is not written again for it),
// awaiting_approval otherwise. A worker whose policy disagrees writes the
// status it is in (approval).
func (c *Client) startStatus(in task.Input) task.Status {
	if c.Policy != nil && planApproval(stricter(*c.Policy, in.Handling), in) == task.HandlingAuto {
		return task.StatusDispatched
	}
	return task.StatusAwaitingApproval
}

func (c *Client) start(ctx context.Context, in task.Input, req startRequest) error {
	opts := client.StartWorkflowOptions{
		ID:                       task.WorkflowID(in.TaskID),
		TaskQueue:                c.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Without it the SDK answers a start under a running task's id
		// with that task, and the new plan is lost.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			task.AttrStatus.ValueSet(string(c.startStatus(in))),
			task.AttrRisk.ValueSet(string(in.Plan.RiskLevel)),
			task.AttrRejectCount.ValueSet(0),
			task.AttrRepo.ValueSet(in.Plan.Repo),
		),
	}
	if req.Key != "" {
		opts.Memo = map[string]any{memoRequest: req}
	}
	_, err := c.Temporal.ExecuteWorkflow(ctx, opts, task.WorkflowType, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		if r, ok := c.refusedStart(ctx, in.TaskID); ok {
			// The id's last start was refused (task.ErrRefused): it is
			// free, and only a refused start's id is taken again.
			in.Restarts, req.Restarts = r.Restarts+1, r.Restarts+1
			opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
			opts.Memo = map[string]any{memoRequest: req}
			_, err = c.Temporal.ExecuteWorkflow(ctx, opts, task.WorkflowType, in)
		}
	}
	if err != nil {
		if !errors.As(err, &started) {
			return c.wrap(err, "starting task "+in.TaskID)
		}
		restarts, err := c.taken(ctx, in.TaskID, req, err)
		if err != nil {
			return err
		}
		// The same request started it: write its first record again, in
		// case the first answer failed at that.
		in.Restarts = restarts
	}
	return c.recordStart(ctx, in)
}

// refusedStart reads how the last run of taskID ended: ok with its
// refusal when its start was refused (failed with a task.ErrRefused).
func (c *Client) refusedStart(ctx context.Context, taskID string) (task.Refusal, bool) {
	d, err := c.Temporal.DescribeWorkflowExecution(ctx, task.WorkflowID(taskID), "")
	if err != nil {
		return task.Refusal{}, false
	}
	e := d.GetWorkflowExecutionInfo()
	if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		return task.Refusal{}, false
	}
	err = c.Temporal.GetWorkflow(ctx, task.WorkflowID(taskID), e.GetExecution().GetRunId()).Get(ctx, nil)
	var app *temporal.ApplicationError
	var r task.Refusal
	if !errors.As(err, &app) || app.Type() != task.ErrRefused || app.Details(&r) != nil {
		return task.Refusal{}, false
	}
	return r, true
}

// StartNext starts a task under the next free id of the year, retrying
// on a clash with a concurrent start, and returns the id. With a
// RequestKey that started a task already, it returns that task's id.
func (c *Client) StartNext(ctx context.Context, in task.Input, year int) (string, error) {
	in.TaskID = ""
	if err := CheckDispatches(in, time.Now()); err != nil {
		return "", err
	}
	req, err := newStartRequest(in)
	if err != nil {
		return "", err
	}
	n, prior, err := c.highestNumber(ctx, year, req.Key)
	if err != nil {
		return "", err
	}
	if prior != nil {
		if err := req.answers(prior.req, prior.id); err != nil {
			return prior.id, err
		}
		in.TaskID = prior.id
		return prior.id, c.recordStart(ctx, in)
	}
	for range 1000 {
		n++
		in.TaskID = fmt.Sprintf("T-%04d-%03d", year, n)
		err := c.start(ctx, in, req)
		if errors.Is(err, errTaken) {
			continue
		}
		return in.TaskID, err
	}
	return "", task.Errorf(task.CodeConflict, "no free task id found for %d", year)
}

// priorStart is a task started under the request key being looked for.
type priorStart struct {
	id  string
	req startRequest
}

// highestNumber is the largest NNN among the year's task ids in
// visibility, and the task among them started under key, if any. One
// listing answers both, so a task seen for the first is seen for the
// second.
func (c *Client) highestNumber(ctx context.Context, year int, key string) (int, *priorStart, error) {
	prefix := fmt.Sprintf("T-%04d-", year)
	q := fmt.Sprintf("WorkflowType = '%s' AND WorkflowId STARTS_WITH '%s'", task.WorkflowType, prefix)
	best := 0
	var prior *priorStart
	var token []byte
	for {
		resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token})
		if err != nil {
			return 0, nil, c.wrap(err, "listing task ids")
		}
		for _, e := range resp.Executions {
			id := e.Execution.WorkflowId
			n, err := strconv.Atoi(strings.TrimPrefix(id, prefix))
			if err != nil {
				continue
			}
			best = max(best, n)
			if key == "" {
				continue
			}
			if r := requestOf(e); r.Key == key && (prior == nil || id < prior.id) {
				prior = &priorStart{id: id, req: r}
			}
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			return best, prior, nil
		}
	}
}

func checkTaskID(id string) error {
	if !task.ValidID(id) {
		return &task.Error{Code: task.CodeInvalid, Message: fmt.Sprintf("task_id: %q is not T-YYYY-NNN", id),
			Fields: []amp.FieldError{{Path: "task_id", Problem: "must be T-YYYY-NNN"}}}
	}
	return nil
}
