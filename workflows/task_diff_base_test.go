package workflows

import (
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
)

// TestDiffBasePinnedAtApproval: the default branch's head read when the
// plan is approved (not when it was checked) is the base every result
// check is given, however main moves afterwards.
func TestDiffBasePinnedAtApproval(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	heads := []string{"aaaa1111", "bbbb2222", "cccc3333"}
	calls := 0
	h.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
		head := heads[min(calls, len(heads)-1)]
		calls++
		return activities.CheckBranchResult{DefaultBranch: "main", Head: "abc", DefaultHead: head}, nil
	}
	var checked []activities.CheckResultInput
	h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
		checked = append(checked, in)
		return activities.CheckResultOutput{Commit: in.Commit, Actual: in.Claimed, DiffURL: "/d.diff"}, nil
	}
	end := h.rejectRound(0)
	h.round(end)
	h.run()

	if calls != 2 || len(checked) != 2 {
		t.Fatalf("%d branch checks and %d result checks, want 2 of each", calls, len(checked))
	}
	for i, in := range checked {
		if in.Base != "bbbb2222" {
			t.Errorf("result check %d: base %q, want the default head at approval", i, in.Base)
		}
	}
}
