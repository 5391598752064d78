package workers

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// TestSubmitResultSlowCheck: a task_result whose git check outlasts the
// client's wait is answered as taken, with the task's status and no
// warnings, not as a failure; the task got the update once.
func TestSubmitResultSlowCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := embeddedTemporal(t, ctx)

	// A stand-in task whose result check takes until it is signalled.
	var handled atomic.Int32
	slowTask := func(ctx workflow.Context) error {
		checked := false
		if err := workflow.SetQueryHandler(ctx, task.QueryState, func() (task.State, error) {
			return task.State{Status: task.StatusInProgress}, nil
		}); err != nil {
			return err
		}
		if err := workflow.SetUpdateHandler(ctx, task.UpdateSubmit, func(ctx workflow.Context, in task.SubmitInput) (task.SubmitResult, error) {
			handled.Add(1)
			rec, err := amp.ParseRecord(in.Raw)
			if err != nil {
				return task.SubmitResult{}, err
			}
			err = workflow.Await(ctx, func() bool { return checked })
			return task.SubmitResult{MsgID: rec.ID(), Status: task.StatusInReview, Warnings: []string{"lines_added: claimed 5, git shows 3"}}, err
		}); err != nil {
			return err
		}
		workflow.GetSignalChannel(ctx, "checked").Receive(ctx, nil)
		checked = true
		return workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	}
	const queue = "ampflow-slow-check-test"
	workflowWorker(t, c, queue, task.WorkflowType, slowTask)
	const id = "T-2026-001"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, task.WorkflowType)
	if err != nil {
		t.Fatal(err)
	}

	yes := true
	m := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, id, time.Now(), &amp.TaskResult{
		SubtaskID: "S1", CompletionStatus: amp.StatusComplete, CommitHash: "a3f8d21",
		DiffSummary:    amp.DiffSummary{FilesChanged: []string{"a.txt"}, LinesAdded: 5},
		SelfAssessment: amp.SelfAssessment{CriteriaMet: []*bool{&yes}, Notes: []string{"ok"}},
		WorkLog:        []amp.WorkLogEntry{{Timestamp: "2026-11-29T10:00:00Z", Action: "edit", File: "a.txt", Detail: "x"}},
	})
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	tasks := &workflows.Client{Temporal: c, TaskQueue: queue, Wait: time.Second, DecisionKey: []byte("0123456789abcdef0123456789abcdef")}
	out, err := tasks.Submit(ctx, raw)
	if err != nil || out.MsgID != m.MsgID || out.Status != task.StatusInProgress || len(out.Warnings) != 0 {
		t.Fatalf("Submit = %+v, %v; want %s taken as in_progress, without warnings", out, err, m.MsgID)
	}
	if err := c.SignalWorkflow(ctx, id, "", "checked", nil); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := handled.Load(); n != 1 {
		t.Errorf("the task handled the result %d times, want once", n)
	}
}
