package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// starts is a Temporal client holding one task id, whose last run ended
// as status, with err as its outcome; it keeps the starts it is sent.
type starts struct {
	client.Client
	status  enumspb.WorkflowExecutionStatus
	outcome error
	sent    []client.StartWorkflowOptions
	inputs  []task.Input
}

func (s *starts) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	s.sent = append(s.sent, o)
	s.inputs = append(s.inputs, args[0].(task.Input))
	if s.status == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED && o.WorkflowIDReusePolicy == enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY {
		s.status = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		return run{}, nil
	}
	if s.status != enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED {
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("taken", "", "r1")
	}
	s.status = enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	return run{}, nil
}

func (s *starts) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "r1"}, Status: s.status}}, nil
}

func (s *starts) GetWorkflow(_ context.Context, _, _ string) client.WorkflowRun {
	return run{err: s.outcome}
}

type run struct{ err error }

func (run) GetID() string                    { return testTaskID }
func (run) GetRunID() string                 { return "r1" }
func (run) GetFirstExecutionRunID() string   { return "r1" }
func (r run) Get(context.Context, any) error { return r.err }
func (r run) GetWithOptions(context.Context, any, client.WorkflowRunGetOptions) error {
	return r.err
}

// overWire is err as a client reads it back from Temporal.
func overWire(err error) error {
	fc := temporal.GetDefaultFailureConverter()
	return fc.FailureToError(fc.ErrorToFailure(err))
}

// TestStartAfterRefusal: a task id whose last start was refused (its run
// failed with a TaskRefused) is started again with a valid plan, as the
// next start under it (Restarts); an id whose run completed, or failed
// otherwise, stays taken.
func TestStartAfterRefusal(t *testing.T) {
	in := task.Input{TaskID: testTaskID, Plan: testPlan(amp.RiskLow, "S1")}
	refused := overWire(temporal.NewNonRetryableApplicationError(`refused: branch "feature/member-count" not found`, task.ErrRefused, nil,
		task.Refusal{Reason: `refused: branch "feature/member-count" not found`, Field: "plan.branch"}))

	t.Run("Refused", func(t *testing.T) {
		tc := &starts{status: enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, outcome: refused}
		if err := (&Client{Temporal: tc}).Start(t.Context(), in); err != nil {
			t.Fatalf("start under a refused id: %v", err)
		}
		if len(tc.sent) != 2 || tc.sent[1].WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY {
			t.Fatalf("starts %+v, want a second one allowing a failed run's id", tc.sent)
		}
		if tc.inputs[0].Restarts != 0 || tc.inputs[1].Restarts != 1 {
			t.Errorf("restarts %d then %d, want 0 then 1", tc.inputs[0].Restarts, tc.inputs[1].Restarts)
		}
	})
	for _, c := range []struct {
		name    string
		status  enumspb.WorkflowExecutionStatus
		outcome error
	}{
		{"Completed", enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, nil},
		{"Running", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil},
		{"FailedOtherwise", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, overWire(errors.New("task T-2026-001: unknown phase"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			tc := &starts{status: c.status, outcome: c.outcome}
			err := (&Client{Temporal: tc}).Start(t.Context(), in)
			var te *task.Error
			if !errors.As(err, &te) || te.Code != task.CodeConflict || len(te.Fields) != 1 || te.Fields[0].Path != "task_id" {
				t.Errorf("start: %v, want the id taken", err)
			}
			if len(tc.sent) != 1 {
				t.Errorf("%d starts sent, want 1", len(tc.sent))
			}
		})
	}
}

// TestStartRefusedBeforeWorkflow: a plan with a subtask whose dispatch
// would not be valid AMP is refused by the client, naming the field, and
// no workflow is started.
func TestStartRefusedBeforeWorkflow(t *testing.T) {
	plan := testPlan(amp.RiskLow, "S1", "S2")
	plan.Subtasks[1].Description = ""
	tc := &starts{}
	c := &Client{Temporal: tc}
	for _, start := range []func() error{
		func() error { return c.Start(t.Context(), task.Input{TaskID: testTaskID, Plan: plan}) },
		func() error { _, err := c.StartNext(t.Context(), task.Input{Plan: plan}, 2026); return err },
	} {
		err := start()
		var te *task.Error
		if !errors.As(err, &te) || te.Code != task.CodeInvalid || len(te.Fields) == 0 ||
			!strings.HasPrefix(te.Fields[0].Path, "plan.subtasks[1]") {
			t.Errorf("start: %v, want invalid naming plan.subtasks[1]", err)
		}
	}
	if len(tc.sent) != 0 {
		t.Errorf("%d workflows started for a refused plan", len(tc.sent))
	}
}
