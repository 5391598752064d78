package workflows

import (
	"context"
	"slices"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TestLocalActivities checks which work a task keeps in the worker: the
// policy, git checks, SSOT batches and pull-mode deliveries run as local
// activities; a delivery the worker refuses to run locally (a command-mode
// agent) falls back to a regular activity.
func TestLocalActivities(t *testing.T) {
	for _, tc := range []struct {
		name          string
		command       bool
		local, remote []string
	}{
		{"PullAgents", false, []string{"TaskPolicy", "CheckBranch", "CheckResult", "Record", "Deliver"}, nil},
		{"CommandAgents", true, []string{"TaskPolicy", "CheckBranch", "CheckResult", "Record"}, []string{"Deliver"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testPlan(amp.RiskLow, "T-2026-001-S1"))
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
}
