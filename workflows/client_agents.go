package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// Tasks is what the entry points (CLI, HTTP API, chat) need of task
// workflows. *Client implements it; tests use fakes.
type Tasks interface {
	Start(ctx context.Context, in task.Input) error
	StartNext(ctx context.Context, in task.Input, year int) (string, error)
	Submit(ctx context.Context, raw []byte) (task.SubmitResult, error)
	Ack(ctx context.Context, msgID string, as amp.Role) (task.SubmitResult, error)
	Decide(ctx context.Context, taskID string, in decision.Answer) (task.DecideResult, error)
	Cancel(ctx context.Context, taskID string, in task.CancelInput) (task.ChangeResult, error)
	Replan(ctx context.Context, taskID string, in task.ReplanInput) (task.ChangeResult, error)
	Heartbeat(ctx context.Context, taskID string, in task.HeartbeatInput) error
	State(ctx context.Context, taskID string) (task.State, error)
	List(ctx context.Context, status task.Status, limit int) ([]TaskSummary, error)
	Inbox(ctx context.Context, role amp.Role) ([]amp.Message, error)
	Pending(ctx context.Context) ([]decision.Decision, error)
}

var _ Tasks = (*Client)(nil)

// running lists the tasks that have not ended.
func (c *Client) running(ctx context.Context) ([]TaskSummary, error) {
	all, err := c.List(ctx, "", 0)
	if err != nil {
		return nil, err
	}
	var out []TaskSummary
	for _, s := range all {
		if s.Running {
			out = append(out, s)
		}
	}
	return out, nil
}

// Inbox returns the messages addressed to role that still await its ACK
// or reply, oldest task first.
func (c *Client) Inbox(ctx context.Context, role amp.Role) ([]amp.Message, error) {
	if role != amp.RoleExecutor && role != amp.RoleReviewer {
		return nil, &task.Error{Code: task.CodeInvalid, Message: fmt.Sprintf("role: %q has no inbox; use executor or reviewer", role),
			Fields: []amp.FieldError{{Path: "role", Problem: "must be executor or reviewer"}}}
	}
	tasks, err := c.running(ctx)
	if err != nil {
		return nil, err
	}
	out := []amp.Message{}
	for i := len(tasks) - 1; i >= 0; i-- {
		switch tasks[i].Status {
		case task.StatusDispatched, task.StatusInProgress, task.StatusInReview:
		default:
			continue
		}
		st, err := c.State(ctx, tasks[i].TaskID)
		if task.ErrorCode(err) == task.CodeNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, m := range st.Outbox {
			if m.To == role {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// Pending returns the open decisions of all running tasks.
func (c *Client) Pending(ctx context.Context) ([]decision.Decision, error) {
	tasks, err := c.running(ctx)
	if err != nil {
		return nil, err
	}
	out := []decision.Decision{}
	for i := len(tasks) - 1; i >= 0; i-- {
		st, err := c.State(ctx, tasks[i].TaskID)
		if task.ErrorCode(err) == task.CodeNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if st.Pending != nil {
			out = append(out, *st.Pending)
		}
	}
	return out, nil
}

// Ack writes role's ACK of a message waiting in its task's outbox.
func (c *Client) Ack(ctx context.Context, msgID string, as amp.Role) (task.SubmitResult, error) {
	_, taskID, ok := amp.ParseMsgID(msgID)
	if !ok {
		return task.SubmitResult{}, &task.Error{Code: task.CodeInvalid, Message: fmt.Sprintf("msg_id: %q is not {type}-{task_id}-{unix_ms}", msgID),
			Fields: []amp.FieldError{{Path: "msg_id", Problem: "malformed"}}}
	}
	st, err := c.State(ctx, taskID)
	if err != nil {
		return task.SubmitResult{}, err
	}
	if st.Status.Terminal() {
		return task.SubmitResult{}, endedError(taskID, st.Status)
	}
	ack := func(m amp.Message) (task.SubmitResult, error) {
		raw, err := json.Marshal(amp.NewAck(as, m, time.Now()))
		if err != nil {
			return task.SubmitResult{}, fmt.Errorf("encoding ACK of %s: %w", msgID, err)
		}
		return c.Submit(ctx, raw)
	}
	for _, m := range st.Outbox {
		if m.MsgID == msgID {
			return ack(m)
		}
	}
	// ACKed already: the task says whether it is the holder's (nothing
	// changes) or another agent's (refused as claimed).
	if h := task.HolderOf(st.Holders, as); h != nil && h.MsgID == msgID {
		a := AgentFrom(ctx)
		if e := task.Claimed(taskID, h, a.Name, a.Admin); e != nil {
			return task.SubmitResult{}, e
		}
		if h.Unanswered != nil {
			return ack(*h.Unanswered)
		}
	}
	return task.SubmitResult{}, task.Errorf(task.CodeUnexpected, "no message %s awaits an ACK in task %s", msgID, taskID)
}

// Agent is who sends records and heartbeats through a Client: the name
// of the API token they came with, and whether it is an admin's. The API
// sets it from the token (WithAgent); the task takes the first agent to
// ACK a message as the holder of its work (task.Holder).
type Agent struct {
	Name  string
	Admin bool
}

type agentKey struct{}

// WithAgent is ctx carrying the agent that sends through it.
func WithAgent(ctx context.Context, a Agent) context.Context {
	return context.WithValue(ctx, agentKey{}, a)
}

// AgentFrom is the agent WithAgent set; the zero Agent (no token) when
// none was.
func AgentFrom(ctx context.Context) Agent {
	a, _ := ctx.Value(agentKey{}).(Agent)
	return a
}

// Heartbeat passes an agent's sign of life to its task, at most one a
// HeartbeatEvery per task and role and one note a NoteEvery per task
// (the others are taken and not sent).
func (c *Client) Heartbeat(ctx context.Context, taskID string, in task.HeartbeatInput) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err
	}
	a := AgentFrom(ctx)
	in.By, in.Admin = a.Name, a.Admin
	// A signal has no answer: the holder is read first, so that another
	// agent hears that the work is not its own. A recovered heartbeat
	// hands the work on and is never refused.
	if in.By != "" && !in.Admin && !in.Recovered {
		st, err := c.State(ctx, taskID)
		if err != nil {
			return err
		}
		if e := task.Claimed(taskID, task.HolderOf(st.Holders, in.From), in.By, in.Admin); e != nil {
			return e
		}
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	in, send := c.beats.admit(taskID, in, now())
	if !send {
		return nil
	}
	in.At = time.Now().UTC()
	sig, err := c.signCommand(taskID, task.SignalHeartbeat, in.SignedAs)
	if err != nil {
		return err
	}
	in.Signature = sig
	err = c.Temporal.SignalWorkflow(ctx, task.WorkflowID(taskID), "", task.SignalHeartbeat, in)
	return c.wrapEnded(ctx, taskID, err, "sending a heartbeat to "+taskID)
}

// RecordUsage passes what a runner's run cost to its task.
func (c *Client) RecordUsage(ctx context.Context, taskID string, in task.UsageInput) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	err := c.Temporal.SignalWorkflow(ctx, task.WorkflowID(taskID), "", task.SignalUsage, in)
	return c.wrapEnded(ctx, taskID, err, "sending a run's usage to "+taskID)
}
