package workflows

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// memoRequest is the memo field in which a task keeps the request that
// started it. A memo, unlike a search attribute, needs nothing registered
// in the namespace, and continue-as-new carries it on.
const memoRequest = "amp_request"

// errTaken marks a start refused because the task id is in use.
var errTaken = errors.New("task id taken")

// startRequest is what a task keeps of the request that started it:
// digests of the caller-scoped idempotency key and of what was asked.
type startRequest struct {
	Key  string `json:"key"`
	Body string `json:"body"`
	// Restarts is the start's Input.Restarts.
	Restarts int `json:"restarts,omitempty"`
}

// RequestKey scopes a client's idempotency key to the caller, so that two
// callers' keys never meet. An empty key stays empty.
func RequestKey(caller, key string) string {
	if key == "" {
		return ""
	}
	return caller + "\x00" + key
}

// MaxIdempotencyKey bounds an idempotency key's length.
const MaxIdempotencyKey = 255

// CheckIdempotencyKey says what is wrong with a client's idempotency key,
// "" when nothing is: up to 255 visible ASCII characters.
func CheckIdempotencyKey(key string) string {
	if len(key) > MaxIdempotencyKey {
		return fmt.Sprintf("must be at most %d characters", MaxIdempotencyKey)
	}
	for _, c := range []byte(key) {
		if c < 0x21 || c > 0x7e {
			return "must be visible ASCII characters, without spaces"
		}
	}
	return ""
}

// newStartRequest digests in's key and request; zero without a key.
// The policy is left out: it comes from configuration, not the caller.
func newStartRequest(in task.Input) (startRequest, error) {
	if in.RequestKey == "" {
		return startRequest{}, nil
	}
	body, err := json.Marshal(struct {
		TaskID      string           `json:"task_id"`
		Plan        amp.TaskDispatch `json:"plan"`
		Handling    task.Handling    `json:"handling"`
		Coordinator string           `json:"coordinator"`
	}{in.TaskID, in.Plan, in.Handling, in.Coordinator})
	if err != nil {
		return startRequest{}, fmt.Errorf("encoding the start request of %s: %w", in.TaskID, err)
	}
	return startRequest{Key: sha256Hex([]byte(in.RequestKey)), Body: sha256Hex(body)}, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// answers reports whether a task started by prior answers req: nil when
// it does, a conflict naming Idempotency-Key when the key was used for
// another request.
func (req startRequest) answers(prior startRequest, taskID string) error {
	if prior.Body == req.Body {
		return nil
	}
	return &task.Error{Code: task.CodeConflict,
		Message: fmt.Sprintf("Idempotency-Key: the key was used for another request, which started task %s; use a new key for a new request", taskID),
		Fields:  []amp.FieldError{{Path: "Idempotency-Key", Problem: "was used for another request (task " + taskID + ")"}}}
}

// requestOf reads the start request a task keeps in its memo.
func requestOf(e *workflowpb.WorkflowExecutionInfo) startRequest {
	var r startRequest
	if p, ok := e.GetMemo().GetFields()[memoRequest]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &r)
	}
	return r
}

// taken answers a start whose task id is in use: the first answer when
// the task was started by the same request, else a conflict.
// The restarts returned are the Input.Restarts of the task that answers.
func (c *Client) taken(ctx context.Context, taskID string, req startRequest, cause error) (int, error) {
	if req.Key != "" {
		d, err := c.Temporal.DescribeWorkflowExecution(ctx, task.WorkflowID(taskID), "")
		if err != nil {
			return 0, c.wrap(err, "reading task "+taskID)
		}
		if prior := requestOf(d.GetWorkflowExecutionInfo()); prior.Key == req.Key {
			return prior.Restarts, req.answers(prior, taskID)
		}
	}
	return 0, &task.Error{Code: task.CodeConflict, Message: fmt.Sprintf("task id %s is taken: choose another, or none for the next free one", taskID),
		Fields: []amp.FieldError{{Path: "task_id", Problem: taskID + " is taken"}}, Err: errors.Join(errTaken, cause)}
}

// ended explains an update or signal Temporal refused with NotFound: for
// a task that has ended, a task_ended error naming its final status; nil
// when the task does not exist or still runs.
func (c *Client) ended(ctx context.Context, taskID string, nf *serviceerror.NotFound) error {
	d, err := c.Temporal.DescribeWorkflowExecution(ctx, task.WorkflowID(taskID), "")
	if err != nil {
		return nil
	}
	e := d.GetWorkflowExecutionInfo()
	if e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil
	}
	ended := endedError(taskID, summarize(e).Status)
	ended.Err = nf
	return ended
}

// endedError is the task_ended refusal of a message for a task that has
// ended in status.
func endedError(taskID string, status task.Status) *task.Error {
	return task.Errorf(task.CodeFinished, "task %s has ended: it is %s and takes no more messages", taskID, status)
}

// Running reports whether the task's workflow still runs; false, nil for
// a task that has ended or does not exist.
func (c *Client) Running(ctx context.Context, taskID string) (bool, error) {
	d, err := c.Temporal.DescribeWorkflowExecution(ctx, task.WorkflowID(taskID), "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return false, nil
	case err != nil:
		return false, c.wrap(err, "reading task "+taskID)
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}
