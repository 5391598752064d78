package bench

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The baseline is a bare Temporal workflow with the client round trips of
// an AMP lifecycle: a start, one update per agent submit, the completion;
// and one no-op activity per update, as ampflow keeps books per step.
const (
	baselineQueue    = "ampflow-bench-baseline"
	baselineWorkflow = "BenchBaseline"
	baselineActivity = "BenchNoop"
	// baselineUpdate is the baseline's stand-in for an agent's submit.
	baselineUpdate = "step"
	// submitsPerLifecycle is the agents' submits in one AMP lifecycle:
	// the executor's ACK and result, the reviewer's ACK and verdict.
	submitsPerLifecycle = 4
)

// baselineInput says how many updates the baseline workflow takes.
type baselineInput struct {
	Steps int `json:"steps"`
}

// baselineResult is what the baseline workflow returns.
type baselineResult struct {
	Steps int `json:"steps"`
}

// stepInput is the payload of a baseline update and activity.
type stepInput struct {
	N int `json:"n"`
}

// stepResult is what a baseline update and activity return.
type stepResult struct {
	N int `json:"n"`
}

func baseline(ctx workflow.Context, in baselineInput) (baselineResult, error) {
	received := 0
	err := workflow.SetUpdateHandler(ctx, baselineUpdate, func(ctx workflow.Context, s stepInput) (stepResult, error) {
		received++
		return stepResult(s), nil
	})
	if err != nil {
		return baselineResult{}, fmt.Errorf("registering update %s: %w", baselineUpdate, err)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	for done := 0; done < in.Steps; done++ {
		if err := workflow.Await(ctx, func() bool { return received > done }); err != nil {
			return baselineResult{}, err
		}
		if err := workflow.ExecuteActivity(ctx, baselineActivity, stepInput{N: done}).Get(ctx, nil); err != nil {
			return baselineResult{}, err
		}
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return baselineResult{}, err
	}
	return baselineResult{Steps: in.Steps}, nil
}

func noop(_ context.Context, s stepInput) (stepResult, error) { return stepResult(s), nil }

func newBaselineWorker(c client.Client) worker.Worker {
	w := worker.New(c, baselineQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(baseline, workflow.RegisterOptions{Name: baselineWorkflow})
	w.RegisterActivityWithOptions(noop, activity.RegisterOptions{Name: baselineActivity})
	return w
}

// baselineLifecycle starts one baseline workflow, sends its updates one
// after the other, each waited for, and waits for it to complete.
func (b *bench) baselineLifecycle(ctx context.Context, id string, lat *latencies) error {
	run, err := b.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: baselineQueue},
		baselineWorkflow, baselineInput{Steps: submitsPerLifecycle})
	if err != nil {
		return fmt.Errorf("starting baseline workflow %s: %w", id, err)
	}
	for i := range submitsPerLifecycle {
		began := time.Now()
		h, err := b.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: baselineUpdate, UpdateID: fmt.Sprintf("%s-%d", id, i),
			Args: []any{stepInput{N: i}}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err != nil {
			return fmt.Errorf("update %d of baseline workflow %s: %w", i, id, err)
		}
		if lat != nil {
			lat.add(time.Since(began))
		}
	}
	var out baselineResult
	if err := run.Get(ctx, &out); err != nil {
		return fmt.Errorf("waiting for baseline workflow %s: %w", id, err)
	}
	return nil
}
