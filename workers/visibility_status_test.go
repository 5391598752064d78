package workers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// visibilityEnd is how a stand-in task workflow leaves visibility: the
// AmpStatus it writes, then whether it completes, fails or keeps running.
type visibilityEnd struct {
	Status task.Status
	End    string // "complete", "fail" or "run"
}

func standInTask(ctx workflow.Context, e visibilityEnd) error {
	if e.Status != task.StatusDispatched {
		if err := workflow.UpsertTypedSearchAttributes(ctx, task.AttrStatus.ValueSet(string(e.Status))); err != nil {
			return err
		}
	}
	switch e.End {
	case "fail":
		return temporal.NewNonRetryableApplicationError("stand-in failure", "test", nil)
	case "run":
		return workflow.Await(ctx, func() bool { return false })
	}
	return nil
}

// TestListReadsCompletionAsDone: a task that ends done writes no
// AmpStatus of done; Client.List reads a completed execution over any
// other status as done, one that failed without a terminal status as
// terminated, and a status filter finds exactly the tasks it reads so,
// on the embedded server's SQLite visibility.
func TestListReadsCompletionAsDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := embeddedTemporal(t, ctx)
	const queue = "ampflow-visibility-test"
	workflowWorker(t, c, queue, task.WorkflowType, standInTask)

	cases := []struct {
		id   string
		end  visibilityEnd
		want task.Status
	}{
		{"T-2026-001", visibilityEnd{task.StatusDispatched, "complete"}, task.StatusDone},
		{"T-2026-002", visibilityEnd{task.StatusAwaitingAdmin, "complete"}, task.StatusDone},
		{"T-2026-003", visibilityEnd{task.StatusDone, "complete"}, task.StatusDone}, // written by an earlier build
		{"T-2026-004", visibilityEnd{task.StatusTerminated, "complete"}, task.StatusTerminated},
		{"T-2026-005", visibilityEnd{task.StatusDispatched, "fail"}, task.StatusTerminated},
		{"T-2026-006", visibilityEnd{task.StatusTerminated, "fail"}, task.StatusTerminated},
		{"T-2026-007", visibilityEnd{task.StatusDispatched, "run"}, task.StatusDispatched},
		{"T-2026-008", visibilityEnd{task.StatusAwaitingApproval, "run"}, task.StatusAwaitingApproval},
	}
	for _, tc := range cases {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tc.id, TaskQueue: queue,
			TypedSearchAttributes: temporal.NewSearchAttributes(task.AttrStatus.ValueSet(string(task.StatusDispatched)))},
			task.WorkflowType, tc.end)
		if err != nil {
			t.Fatal(err)
		}
		if tc.end.End != "run" {
			_ = run.Get(ctx, nil) // failed on purpose for "fail"
		}
	}
	defer func() {
		for _, tc := range cases {
			if tc.end.End == "run" {
				_ = c.TerminateWorkflow(context.Background(), tc.id, "", "test over")
			}
		}
	}()

	tasks := &workflows.Client{Temporal: c, TaskQueue: queue}
	want := func(s task.Status) []string {
		var ids []string
		for _, tc := range cases {
			if s == "" || tc.want == s {
				ids = append(ids, tc.id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	// Visibility is written behind the executions: wait until the whole
	// list reads as wanted, then ask for each status.
	var last error
	for ctx.Err() == nil {
		last = func() error {
			all, err := tasks.List(ctx, "", 0)
			if err != nil {
				return err
			}
			got := map[string]task.Status{}
			for _, s := range all {
				got[s.TaskID] = s.Status
			}
			for _, tc := range cases {
				if got[tc.id] != tc.want {
					return fmt.Errorf("%s (%+v) lists as %q, want %s", tc.id, tc.end, got[tc.id], tc.want)
				}
			}
			return nil
		}()
		if last == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Fatal(last)
	}
	for _, s := range []task.Status{task.StatusDone, task.StatusTerminated, task.StatusDispatched, task.StatusAwaitingApproval, task.StatusAwaitingAdmin} {
		list, err := tasks.List(ctx, s, 0)
		if err != nil {
			t.Fatalf("List(%s): %v", s, err)
		}
		var ids []string
		for _, l := range list {
			if l.Status != s {
				t.Errorf("List(%s) has %s as %s", s, l.TaskID, l.Status)
			}
			ids = append(ids, l.TaskID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, want(s)) {
			t.Errorf("List(%s) = %v, want %v", s, ids, want(s))
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}
