package workers

import (
	"context"
	"errors"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
)

// hostDelivery answers every delivery naming its host.
type hostDelivery struct{ host string }

func (d hostDelivery) Deliver(context.Context, activities.DeliverInput) (activities.DeliverResult, error) {
	return activities.DeliverResult{Mode: "ran on " + d.host}, nil
}

// deliverOn runs the Deliver activity on queue, as a task's pinned run
// does: it must start within a few seconds.
func deliverOn(ctx workflow.Context, queue string) (string, error) {
	m := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, "T-2026-001", workflow.Now(ctx), &amp.TaskDispatch{Description: "d"})
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: queue, ScheduleToStartTimeout: 3 * time.Second,
		StartToCloseTimeout: 10 * time.Second, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	var out activities.DeliverResult
	var acts *activities.Activities
	err := workflow.ExecuteActivity(ctx, acts.Deliver, activities.DeliverInput{Message: m}).Get(ctx, &out)
	return out.Mode, err
}

// TestHostWorkerPollsHostQueue: a runner host's worker takes the runs
// sent to its own queue; with it stopped, a run sent there comes back
// with a schedule-to-start timeout, the task's sign to re-home.
func TestHostWorkerPollsHostQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := embeddedTemporal(t, ctx)
	const queue = "ampflow-test"
	workflowWorker(t, c, queue, "deliverOn", deliverOn)
	hw, err := startHostWorker(c, queue, &activities.Activities{Host: "host-a", Delivery: hostDelivery{"host-a"}})
	if err != nil || hw == nil {
		t.Fatalf("host worker: %v, %v", hw, err)
	}
	run := func(id string) (string, error) {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, "deliverOn", activities.HostQueue(queue, "host-a"))
		if err != nil {
			t.Fatal(err)
		}
		var out string
		err = r.Get(ctx, &out)
		return out, err
	}
	if out, err := run("pinned"); err != nil || out != "ran on host-a" {
		t.Fatalf("a run on host-a's queue: %q, %v; want it run by host-a's worker", out, err)
	}
	hw.Stop()
	_, err = run("gone")
	var te *temporal.TimeoutError
	if !errors.As(err, &te) || te.TimeoutType() != enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
		t.Fatalf("a run on a stopped host's queue: %v, want a schedule-to-start timeout", err)
	}
	if hw, _ := startHostWorker(c, queue, &activities.Activities{}); hw != nil {
		t.Error("a worker that runs no agent CLIs polls a host queue")
	}
}
