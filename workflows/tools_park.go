package workflows

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// sameCall finds the call in already asked: an ask still open for the
// same tool, input and directory, or the answered ask of a parked run that
// its resumed run makes again (taken once). Either is returned as is, with
// no new record.
func (t *taskRun) sameCall(in task.ToolCall) (task.ToolCall, bool) {
	same := func(c task.ToolCall) bool {
		return c.Tool == in.Tool && c.InputDigest == in.InputDigest && c.CWD == in.CWD && c.InputDigest != ""
	}
	for _, q := range t.Tools.Queue {
		if same(q) {
			return q, true
		}
	}
	for i, c := range slices.Backward(t.Tools.Answered) {
		if !same(c) || !slices.Contains(t.Tools.Parked, c.ID) {
			continue
		}
		t.Tools.Answered = slices.Delete(t.Tools.Answered, i, i+1)
		t.Tools.Parked = slices.DeleteFunc(t.Tools.Parked, func(id string) bool { return id == c.ID })
		return c, true
	}
	return task.ToolCall{}, false
}

func (t *taskRun) queuedCall(id string) *task.ToolCall {
	for i := range t.Tools.Queue {
		if t.Tools.Queue[i].ID == id {
			return &t.Tools.Queue[i]
		}
	}
	return nil
}

// unpark waits, without any process, for the decision on the tool call a
// runner's run parked on (app, an activities.ErrParked), and returns how
// to run it again: its session resumed, told the answer. The wait is no
// silence of the agent; it ends when the call is answered, expires
// (tools.park_timeout) or is withdrawn, or when dctx is canceled.
func (t *taskRun) unpark(ctx, dctx workflow.Context, m amp.Message, app *temporal.ApplicationError) (*activities.Resume, error) {
	var p activities.Parked
	_ = app.Details(&p)
	if !slices.Contains(t.Tools.Parked, p.ToolCallID) {
		t.Tools.Parked = append(t.Tools.Parked, p.ToolCallID)
	}
	// ctx is the delivery's coroutine's; dctx, the delivery's own, says
	// when it is called off. The hook records the call before it parks
	// it; one not yet seen here is waited for.
	_, n, _ := cutToolCallID(p.ToolCallID)
	err := workflow.Await(ctx, func() bool { return dctx.Err() != nil || t.Tools.Seq >= n })
	if q := t.queuedCall(p.ToolCallID); err == nil && q != nil {
		until := q.At.Add(q.AskTimeout + q.ParkTimeout)
		if d := t.decisions.Pending(); d != nil && d.ID == t.Tools.Raised && t.Tools.Raised == q.DecisionID && !d.ExpiresAt.IsZero() {
			until = d.ExpiresAt
		}
		t.PausedUntil = until
		t.addTimeline(ctx, task.TimelineEntry{Kind: "parked", MsgID: m.MsgID, To: string(m.To),
			Note: fmt.Sprintf("tool call %s waits for the admins: the run is parked, its session kept, until they answer (denied at %s)",
				p.ToolCallID, until.UTC().Format(time.RFC3339))})
		t.snapshot()
		err = workflow.Await(ctx, func() bool { return dctx.Err() != nil || t.queuedCall(p.ToolCallID) == nil })
	}
	t.PausedUntil = time.Time{}
	t.LastActive = workflow.Now(ctx)
	if err == nil {
		err = dctx.Err()
	}
	if err != nil {
		return nil, err
	}
	r := &activities.Resume{ToolCallID: p.ToolCallID, SessionID: p.SessionID, Decision: task.ToolDeny, By: "ampflow",
		Note: "ampflow has no answer to it"}
	for _, c := range slices.Backward(t.Tools.Answered) {
		if c.ID == p.ToolCallID {
			r.Decision, r.By, r.Note = c.Decision, c.By, c.Note
			if key := allowKey(&c); key != c.Tool {
				r.Destination = strings.TrimPrefix(key, c.Tool+" ")
			}
			if c.Decision == task.ToolDeny {
				r.Note = c.Reason
			}
			break
		}
	}
	t.addTimeline(ctx, task.TimelineEntry{Kind: "parked", MsgID: m.MsgID, To: string(m.To),
		Note: fmt.Sprintf("tool call %s: %s by %s; the run resumes its session", p.ToolCallID, r.Decision, r.By)})
	return r, nil
}

// cutToolCallID splits "<task_id>-tc<n>".
func cutToolCallID(id string) (taskID string, n int, ok bool) {
	i := strings.LastIndex(id, "-tc")
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+3:])
	return id[:i], n, err == nil && n > 0
}
