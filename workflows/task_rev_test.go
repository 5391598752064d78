package workflows

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/task"
)

// TestRevisions checks that a task keeps the shape of the revision it was
// started under: git checks and deliveries run as local activities from
// revision 1 on and as regular ones for a task started before revisions,
// and a
// revision this code does not know stops the worker, not the task.
func TestRevisions(t *testing.T) {
	for _, tc := range []struct {
		name          string
		rev           int
		command       bool
		local, remote []string
	}{
		{"Current", task.Revision, false, []string{"CheckBranch", "CheckResult", "Record", "Deliver"}, nil},
		// The worker refuses to run a command-mode agent in a local
		// activity; the task hands the message over in a regular one.
		{"CommandAgents", task.Revision, true, []string{"CheckBranch", "CheckResult", "Record"}, []string{"Deliver"}},
		// Started by an older client on this worker: the history has no
		// version markers yet, so GetVersion picks the local SSOT batches.
		{"BeforeRevisions", 0, false, []string{"Record"}, []string{"CheckBranch", "CheckResult", "Deliver"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testPlan(amp.RiskLow, "T-2026-001-S1"), func(in *task.Input) { in.Rev = tc.rev })
			h.commandAgents = tc.command
			var local, regular []string
			h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
				local = append(local, info.ActivityType.Name)
			})
			h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				regular = append(regular, info.ActivityType.Name)
			})
			h.round(0)
			if res := h.run(); res.Status != task.StatusDone {
				t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
			}
			for _, want := range tc.local {
				if !slices.Contains(local, want) {
					t.Errorf("%s did not run as a local activity; local: %v", want, local)
				}
				if slices.Contains(regular, want) && !slices.Contains(tc.remote, want) {
					t.Errorf("%s ran as a regular activity; regular: %v", want, regular)
				}
			}
			for _, want := range tc.remote {
				if !slices.Contains(regular, want) {
					t.Errorf("%s did not run as a regular activity; regular: %v", want, regular)
				}
			}
			if n, m := len(h.deliveredOf(amp.TypeTaskDispatch)), len(h.deliveredOf(amp.TypeReviewRequest)); n != 1 || m != 1 {
				t.Errorf("delivered %d dispatches and %d review requests, want one each", n, m)
			}
		})
	}

	t.Run("Newer", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "T-2026-001-S1"), func(in *task.Input) { in.Rev = task.Revision + 1 })
		h.env.ExecuteWorkflow(Task, h.in)
		err := h.env.GetWorkflowError()
		if err == nil || !strings.Contains(err.Error(), "run a newer ampflow worker") {
			t.Fatalf("workflow error %v, want the worker to refuse a newer revision", err)
		}
	})
}
