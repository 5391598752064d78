package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TimeoutError says which step of the demo did not happen before the
// context ended, and where the task stood then.
type TimeoutError struct {
	// Step names what the demo waited for.
	Step   string
	TaskID string
	// Status and LastError are the task's last known state; Status is
	// empty when it could not be read.
	Status    task.Status
	LastError string
	// Pending is the prompt of the decision the task waits for, if any.
	Pending string
	// Hint says what in the setup most likely keeps the task from going on.
	Hint string
	// Err is the last error met while waiting, if any.
	Err error
}

func (e *TimeoutError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "timed out waiting for %s", e.Step)
	if e.TaskID != "" {
		status := string(e.Status)
		if status == "" {
			status = "unknown"
		}
		fmt.Fprintf(&b, " (task %s is %s", e.TaskID, status)
		if e.LastError != "" {
			fmt.Fprintf(&b, ", last_error: %s", e.LastError)
		}
		if e.Pending != "" {
			fmt.Fprintf(&b, ", waiting for an admin: %s", e.Pending)
		}
		b.WriteString(")")
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "; last error: %v", e.Err)
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// Unwrap returns the last error met while waiting.
func (e *TimeoutError) Unwrap() error { return e.Err }

// hint guesses, from where a task stands, which part of the setup keeps
// the demo from going on; dashboard is the dashboard's URL, if any.
func hint(st task.State, step, dashboard string) string {
	switch {
	case st.Underlying() == task.StatusCICheck:
		return "the task waits for CI: the demo needs ci.provider none (the default) for `ampflow dev` and `ampflow demo`"
	case st.Pending != nil && (st.Pending.Kind == task.KindPlanApproval || st.Pending.Kind == task.KindFinalApproval):
		what := "plan"
		if st.Pending.Kind == task.KindFinalApproval {
			what = "final"
		}
		return fmt.Sprintf("%s approval of low-risk tasks is not automatic in this configuration: approve it %s, or run the demo with the default policy",
			what, whereToDecide(st.TaskID, dashboard))
	case st.Pending != nil:
		if dashboard != "" {
			return "the task waits for an admin decision; see the dashboard (" + dashboard + "/) or `ampflow pending`"
		}
		return "the task waits for an admin decision; see `ampflow pending`"
	case st.Status == "":
		return "is an ampflow worker running (`ampflow dev`)?"
	case strings.Contains(step, "inbox") && len(st.Outbox) == 0:
		return "another agent took the message: the demo needs agents.executor.mode and agents.reviewer.mode pull (the default)"
	}
	return ""
}

// whereToDecide names where an admin approves the task's pending
// decision: the dashboard when there is one, and the CLI.
func whereToDecide(taskID, dashboard string) string {
	cli := "`ampflow decide " + taskID + " --option " + decision.OptApprove + "`"
	if taskID == "" {
		cli = "`ampflow decide`"
	}
	if dashboard == "" {
		return "with " + cli
	}
	return "on the dashboard (" + dashboard + "/) or with " + cli
}

// noticePending says, once per decision, that the task waits for an
// admin, and where to answer.
func (r *run) noticePending(st task.State) {
	d := st.Pending
	if d == nil || r.asked[d.ID] {
		return
	}
	r.asked[d.ID] = true
	what, cli := "your decision", "ampflow pending"
	switch d.Kind {
	case task.KindPlanApproval:
		what, cli = "your approval", "ampflow decide "+st.TaskID+" --option "+decision.OptApprove
	case task.KindFinalApproval:
		what, cli = "your final approval", "ampflow decide "+st.TaskID+" --option "+decision.OptApprove
	}
	if r.o.Dashboard != "" {
		r.say("  %-11s waiting for %s on the dashboard: %s/ (or %s)", amp.RoleCoordinator, what, r.o.Dashboard, cli)
		return
	}
	r.say("  %-11s waiting for %s: %s", amp.RoleCoordinator, what, cli)
}

// planApproved narrates how the plan of the task was approved, once its
// first dispatch arrived: by whom and where, or automatically.
func (r *run) planApproved(ctx context.Context) {
	st, err := r.o.Tasks.State(ctx, r.taskID)
	if err != nil {
		return
	}
	for _, o := range st.Decided {
		if o.Kind == task.KindPlanApproval && o.Option == decision.OptApprove {
			r.step(amp.RoleCoordinator, "plan approved", "", "by "+o.By+" on "+o.Channel)
			return
		}
	}
	for _, e := range st.Timeline {
		if e.Kind == "decision" && strings.HasPrefix(e.Note, "plan approved automatically") {
			r.step(amp.RoleCoordinator, "plan approved", "", "automatically, as the policy has it for low risk")
			return
		}
	}
}

// errEnded is a task that ended before the demo did.
var errEnded = errors.New("task ended early")

// wait calls try every poll interval until it reports done, fails, or ctx
// ends; then the error is a *TimeoutError naming step.
func (r *run) wait(ctx context.Context, step string, try func(context.Context) (bool, error)) error {
	var last error
	for {
		done, err := try(ctx)
		if err == nil && done {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			if !retryable(err) {
				return fmt.Errorf("%s: %w", step, err)
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return r.timeout(step, last)
		case <-time.After(r.o.Poll):
		}
	}
}

// retryable errors are those of a worker or server that may still answer.
func retryable(err error) bool {
	return task.ErrorCode(err) == task.CodeUnavailable
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// timeout builds the error of a step that did not happen in time,
// reading the task's state once more on a short context of its own.
func (r *run) timeout(step string, last error) error {
	e := &TimeoutError{Step: step, TaskID: r.taskID, Err: last}
	if r.taskID == "" {
		return e
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := r.o.Tasks.State(ctx, r.taskID)
	if err != nil {
		if e.Err == nil {
			e.Err = err
		}
		e.Hint = hint(task.State{}, step, r.o.Dashboard)
		return e
	}
	e.Status, e.LastError = st.Status, st.LastError
	if st.Pending != nil {
		e.Pending = st.Pending.Prompt
	}
	e.Hint = hint(st, step, r.o.Dashboard)
	return e
}

// awaitMessage waits until role's inbox holds a message of type typ for
// the demo's task other than those already taken.
func (r *run) awaitMessage(ctx context.Context, step string, role amp.Role, typ amp.Type) (amp.Message, error) {
	var got amp.Message
	err := r.wait(ctx, step, func(ctx context.Context) (bool, error) {
		msgs, err := r.o.Tasks.Inbox(ctx, role)
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			if m.TaskID == r.taskID && m.Type == typ && !r.taken[m.MsgID] {
				r.taken[m.MsgID] = true
				got = m
				return true, nil
			}
		}
		st, err := r.o.Tasks.State(ctx, r.taskID)
		if err != nil {
			return false, err
		}
		r.noticePending(st)
		return false, ended(st)
	})
	return got, err
}

// ended is an error when the task ended other than done.
func ended(st task.State) error {
	if st.Status == task.StatusTerminated {
		return fmt.Errorf("%w: %s is %s: %s", errEnded, st.TaskID, st.Status, orNone(st.Reason))
	}
	return nil
}

// awaitStatus waits until the task reaches status.
func (r *run) awaitStatus(ctx context.Context, step string, status task.Status) (task.State, error) {
	var got task.State
	err := r.wait(ctx, step, func(ctx context.Context) (bool, error) {
		st, err := r.o.Tasks.State(ctx, r.taskID)
		if err != nil {
			return false, err
		}
		got = st
		if st.Status == status {
			return true, nil
		}
		r.noticePending(st)
		return false, ended(st)
	})
	return got, err
}

// submitting retries a submission the task is not ready for yet: it
// takes a record only once its run loop has caught up with the last one.
func (r *run) submitting(ctx context.Context, step string, send func(context.Context) (task.SubmitResult, error)) (task.SubmitResult, error) {
	var res task.SubmitResult
	var refused error
	tries := 0
	err := r.wait(ctx, step, func(ctx context.Context) (bool, error) {
		var err error
		res, err = send(ctx)
		if task.ErrorCode(err) == task.CodeUnexpected && tries < maxEarlyTries {
			tries++
			refused = err
			return false, nil
		}
		return err == nil, err
	})
	var te *TimeoutError
	if errors.As(err, &te) && te.Err == nil {
		te.Err = refused
	}
	return res, err
}

// maxEarlyTries bounds the retries of a submission refused as unexpected.
const maxEarlyTries = 20
