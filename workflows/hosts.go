package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// Host affinity. A runner's run works in a checkout and a CLI session
// that live on one host, so every run of a task, the executor's and the
// reviewer's, goes to the host that holds them: the task's first runner
// delivery, tried as a local activity, is refused by the worker running
// the workflow with its host's name (activities.NeedsActivityDetail), and
// the task keeps it (Host). Its runs then go to that host's queue
// (activities.HostQueue) with a schedule-to-start timeout of
// runner.host_timeout: a host that does not take a run in that time is
// gone, its run comes back, and the task re-homes to the host of the
// worker running the workflow then, which makes a fresh checkout of the
// task's branch and starts new sessions primed with the transcript so
// far. A run on a dead host's queue is never started once it came back,
// so no run executes on two hosts at once.

// hostTimeout is how long a run waits for its host to take it.
func (t *taskRun) hostTimeout() time.Duration {
	if d := t.In.Policy.HostTimeout; d > 0 {
		return d
	}
	return 2 * time.Minute
}

// takeHost keeps the host a worker named in refusing a runner delivery
// as a local activity, when the task has none yet.
func (t *taskRun) takeHost(ctx workflow.Context, err error) {
	var app *temporal.ApplicationError
	var d activities.NeedsActivityDetail
	if t.Host != "" || !errors.As(err, &app) || !app.HasDetails() || app.Details(&d) != nil || d.Host == "" {
		return
	}
	t.Host = d.Host
	t.addTimeline(ctx, task.TimelineEntry{Kind: "host", Note: "runs on host " + d.Host})
}

// deliverRemote runs the Deliver activity: on the task's host's queue
// when it has one, re-homing when that host does not take it in time.
func (t *taskRun) deliverRemote(ctx, dctx workflow.Context, in activities.DeliverInput) error {
	for {
		opts := DeliverOptions()
		host := t.Host
		role := in.Message.To
		in.Rehome = nil
		if host != "" {
			opts.TaskQueue = activities.HostQueue(workflow.GetInfo(ctx).TaskQueueName, host)
			opts.ScheduleToStartTimeout = t.hostTimeout()
			if t.HostLeft != nil && slices.Contains(t.HostFresh, role) {
				in.Rehome = &activities.Rehome{From: t.HostLeft.From, SeenAt: t.HostLeft.SeenAt}
			}
		}
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, opts), acts.Deliver, in).Get(ctx, nil)
		if host == "" || !scheduleToStartTimeout(err) {
			if !temporal.IsCanceledError(err) {
				// The role's session and checkout are on the host now.
				t.HostFresh = slices.DeleteFunc(t.HostFresh, func(r amp.Role) bool { return r == role })
			}
			return err
		}
		if dctx.Err() != nil {
			return temporal.NewCanceledError()
		}
		if err := t.rehome(ctx, host); err != nil {
			return err
		}
	}
}

// scheduleToStartTimeout reports whether err is a run its host did not
// take in time.
func scheduleToStartTimeout(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
}

// rehome moves the task from host gone to the host of the worker running
// the workflow now (none: its runs go to any host), and says so on the
// timeline.
func (t *taskRun) rehome(ctx workflow.Context, gone string) error {
	var out activities.RunnerHostResult
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 10 * time.Second, MaximumAttempts: 5},
	})
	if err := workflow.ExecuteLocalActivity(lctx, acts.RunnerHost, activities.RunnerHostInput{TaskID: t.In.TaskID, Gone: gone}).Get(ctx, &out); err != nil {
		// Without the fleet's word the run still moves; only the note
		// lacks when the host was last seen.
		t.log.Warn("reading the fleet's hosts", "host", gone, "error", err)
	}
	seen := "no run taken for " + task.FormatDuration(t.hostTimeout())
	if !out.GoneSeenAt.IsZero() {
		seen = "not seen since " + out.GoneSeenAt.UTC().Format(time.RFC3339)
	}
	to := "any host"
	if out.Host != "" {
		to = "host " + out.Host
	}
	t.Host, t.HostFresh = out.Host, []amp.Role{amp.RoleExecutor, amp.RoleReviewer}
	t.HostLeft = &hostLeft{From: gone, SeenAt: out.GoneSeenAt}
	t.addTimeline(ctx, task.TimelineEntry{Kind: "host", Note: fmt.Sprintf("re-homed from host %s to %s: %s %s", gone, to, gone, seen)})
	t.snapshot()
	return nil
}
