package goal

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	goalacts "github.com/ampflow/ampflow/activities/goal"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

// startReady starts every waiting task whose blockers are all done; the
// fleet's slots bound how many of their agents' runs go at once.
func (r *run) startReady(ctx workflow.Context) {
	for i := range r.Tasks {
		t := &r.Tasks[i]
		t.WaitingOn = slices.DeleteFunc(slices.Clone(t.BlockedBy), func(k string) bool {
			b := r.Tasks[r.index(k)]
			return b.Status == goal.TaskDone && b.Merged != ""
		})
		if t.Status != goal.TaskWaiting || len(t.WaitingOn) > 0 {
			continue
		}
		t.Status = goal.TaskStarting
		workflow.Go(ctx, func(ctx workflow.Context) { r.runTask(ctx, i) })
	}
}

// runTask makes task i's branch at the target's head, starts its task
// and waits for it to end.
func (r *run) runTask(ctx workflow.Context, i int) {
	if r.attempts == nil {
		r.attempts = map[int]int{}
	}
	attempt := r.attempts[i]
	r.attempts[i]++
	spec := r.Goal.Tasks[i]
	in := goalacts.StartTaskInput{GoalID: r.Goal.ID, Key: spec.Key, Attempt: attempt, Target: r.Target, Remote: r.onRemote(), Input: task.Input{
		Plan: spec.Plan, Coordinator: r.in.Coordinator, CreateBranch: true,
		Queue: &task.QueueSpec{Target: r.Target, Goal: r.id, Key: spec.Key},
	}}
	sctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{goalacts.ErrTaskStart, activities.ErrBranchMissing, activities.ErrDeliveryConfig, activities.ErrPush}},
	})
	var started goalacts.StartTaskResult
	if err := workflow.ExecuteActivity(sctx, gacts.GoalStartTask, in).Get(ctx, &started); err != nil {
		r.finishTask(ctx, i, goal.TaskTerminated, "could not start: "+errMessage(err))
		return
	}
	t := &r.Tasks[i]
	t.TaskID, t.Base, t.Status, t.StartedAt, t.Reason = started.TaskID, started.Base, goal.TaskRunning, workflow.Now(ctx), ""
	r.recordTask(ctx, i, "started")
	r.changed = true
	r.awaitTask(ctx, i, started.TaskID)
}

// onRemote reports whether the goal's tasks deliver to the repository's
// push remote, so their merge queue moves the target there, as a task's
// queueOnRemote has it: with pull requests, or for a repository given by
// URL. Their branches are then made from the target on the remote.
func (r *run) onRemote() bool {
	return r.policy.Delivery.PullRequests() || amp.RepoIsURL(r.Goal.Repo)
}

// awaitTask waits for task i's task to end and takes how it ended.
func (r *run) awaitTask(ctx workflow.Context, i int, taskID string) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 365 * 24 * time.Hour,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	var res task.Result
	if err := workflow.ExecuteActivity(actx, gacts.AwaitTask, goalacts.AwaitTaskInput{TaskID: taskID}).Get(ctx, &res); err != nil {
		if ctx.Err() == nil {
			r.finishTask(ctx, i, goal.TaskTerminated, "waiting for it: "+errMessage(err))
		}
		return
	}
	if res.Status == task.StatusDone && res.Merged != "" {
		t := &r.Tasks[i]
		t.Queue, t.Merged = task.QueueMerged, res.Merged
		r.queueOrder()
		r.finishTask(ctx, i, goal.TaskDone, "")
		return
	}
	if res.Status == task.StatusDone {
		// Its dependents start from a target that holds its work, or not
		// at all: the admins decide.
		r.finishTask(ctx, i, goal.TaskTerminated, "done, but not merged into "+r.Target)
		return
	}
	r.finishTask(ctx, i, goal.TaskTerminated, res.Reason)
}

func (r *run) finishTask(ctx workflow.Context, i int, s goal.TaskStatus, reason string) {
	t := &r.Tasks[i]
	t.Status, t.Reason, t.EndedAt = s, reason, workflow.Now(ctx)
	r.recordTask(ctx, i, string(s))
	r.changed = true
}

// recordTask writes a task's move in the goal's chain.
func (r *run) recordTask(ctx workflow.Context, i int, what string) {
	t := r.Tasks[i]
	b, _ := json.Marshal(map[string]any{"key": t.Key, "task_id": t.TaskID, "event": what, "reason": t.Reason, "base": t.Base, "merged": t.Merged})
	id := fmt.Sprintf("%s-%s-%d-%s", r.id, t.Key, r.attempts[i], what)
	r.queue = append(r.queue, effect{record: &activities.RecordEntry{ID: id, Kind: kindGoal, Body: b, RecordedAt: workflow.Now(ctx)}})
}

// holdDependents holds every task that waits, directly or through
// others, on a task that ended terminated, and lets one go again when
// that task is retried.
func (r *run) holdDependents() {
	for range r.Tasks {
		moved := false
		for i := range r.Tasks {
			t := &r.Tasks[i]
			if t.Status != goal.TaskWaiting && t.Status != goal.TaskHeld {
				continue
			}
			var stuck []string
			for _, k := range t.BlockedBy {
				if s := r.Tasks[r.index(k)].Status; s == goal.TaskTerminated || s == goal.TaskHeld {
					stuck = append(stuck, k)
				}
			}
			switch {
			case len(stuck) > 0 && t.Status != goal.TaskHeld:
				t.Status, t.Reason, moved = goal.TaskHeld, "held: waits on "+strings.Join(stuck, ", ")+", which cannot go on until an admin decides", true
			case len(stuck) == 0 && t.Status == goal.TaskHeld:
				t.Status, t.Reason, moved = goal.TaskWaiting, "", true
			}
		}
		if !moved {
			return
		}
	}
}

// askAboutTerminated asks the admins what to do about the first task
// that ended terminated, when no question is open: the goal is blocked
// until they answer.
func (r *run) askAboutTerminated(ctx workflow.Context) error {
	i := slices.IndexFunc(r.Tasks, func(t goal.TaskState) bool { return t.Status == goal.TaskTerminated })
	if i < 0 {
		r.Status, r.Reason = goal.StatusRunning, ""
		return nil
	}
	t := r.Tasks[i]
	var held []string
	for _, o := range r.Tasks {
		if o.Status == goal.TaskHeld {
			held = append(held, o.Key)
		}
	}
	r.Status = goal.StatusBlocked
	r.Reason = fmt.Sprintf("task %s (%s) ended terminated: %s", t.Key, cmpOr(t.TaskID, "not started"), cmpOr(t.Reason, "no reason given"))
	if len(held) > 0 {
		r.Reason += "; " + strings.Join(held, ", ") + " wait on it"
	}
	r.Reason += "; waiting for an admin to retry it or abandon the goal"
	if d := r.engine.Pending(); d != nil || r.engine.Answered(goal.DecisionBlocked) {
		return nil
	}
	r.asked = t.Key
	_, err := r.engine.Raise(ctx, decide.Request{
		Kind:   goal.DecisionBlocked,
		Prompt: fmt.Sprintf("Goal %s: %s. Retry %s as a new task, or abandon the goal?", r.Goal.ID, strings.TrimSuffix(r.Reason, "; waiting for an admin to retry it or abandon the goal"), t.Key),
		Options: []decision.Option{
			{ID: goal.OptRetry, Label: "Retry " + t.Key},
			{ID: goal.OptAbandon, Label: "Abandon the goal"},
		},
		Context: decision.Context{Description: r.Goal.Description, Risk: r.risk(),
			Extra: map[string]any{"goal_id": r.Goal.ID, "key": t.Key, "task_id": t.TaskID, "held": held}},
		Approves: struct {
			GoalID string `json:"goal_id"`
			Key    string `json:"key"`
			TaskID string `json:"task_id"`
			Digest string `json:"digest"`
		}{r.Goal.ID, t.Key, t.TaskID, r.Digest},
		OnExpiry: goal.OptAbandon,
	})
	return err
}

// takeBlocked carries out the admins' answer about a terminated task;
// true ends the goal.
func (r *run) takeBlocked(ctx workflow.Context, o decision.Outcome) bool {
	i := r.index(r.asked)
	if o.Option == goal.OptRetry && i >= 0 && r.Tasks[i].Status == goal.TaskTerminated {
		t := &r.Tasks[i]
		t.Status, t.Reason, t.TaskID, t.StartedAt, t.EndedAt = goal.TaskWaiting, "", "", time.Time{}, time.Time{}
		t.Queue, t.QueuedAt, t.QueueRounds, t.Merged, t.QueueSeq = "", time.Time{}, 0, "", 0
		r.queueOrder()
		r.Status, r.Reason = goal.StatusRunning, ""
		return false
	}
	if o.Option == goal.OptRetry {
		return false
	}
	r.Reason = fmt.Sprintf("abandoned by %s via %s", o.By, o.Channel)
	if o.Note != "" {
		r.Reason += ": " + o.Note
	}
	return true
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// errMessage is an activity error's message without Temporal's wrapping.
func errMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

// queueMove takes a task's move in the target's merge queue, as its
// task tells it (task.SignalQueueMove).
func (r *run) queueMove(mv task.QueueMove) {
	i := r.index(mv.Key)
	if i < 0 || r.Tasks[i].TaskID != mv.TaskID || r.Tasks[i].Queue == task.QueueMerged || mv.Seq <= r.Tasks[i].QueueSeq {
		return
	}
	t := &r.Tasks[i]
	t.QueueSeq = mv.Seq
	if mv.Status == task.QueueQueued && t.Queue != task.QueueQueued {
		t.QueuedAt = mv.At
	}
	t.Queue, t.QueueRounds = mv.Status, mv.Rounds
	if mv.Status == task.QueueMerged {
		t.Merged = mv.Commit
	}
	r.queueOrder()
}

// queueOrder lists the goal's tasks in the merge queue: the merging
// first, then the queued by when they entered.
func (r *run) queueOrder() {
	var in []int
	for i, t := range r.Tasks {
		if t.Queue == task.QueueQueued || t.Queue == task.QueueMerging {
			in = append(in, i)
		}
	}
	slices.SortStableFunc(in, func(a, b int) int {
		ta, tb := r.Tasks[a], r.Tasks[b]
		if (ta.Queue == task.QueueMerging) != (tb.Queue == task.QueueMerging) {
			if ta.Queue == task.QueueMerging {
				return -1
			}
			return 1
		}
		return ta.QueuedAt.Compare(tb.QueuedAt)
	})
	r.Queue = nil
	for _, i := range in {
		r.Queue = append(r.Queue, r.Tasks[i].Key)
	}
}
