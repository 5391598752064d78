package workflows

import (
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
)

// TestDiffBasePinnedAtApproval: the default branch's head read when the
// plan is approved is the base every result check is given, however main
// moves afterwards. A plan approved by an admin has the branch checked
// again then; one approved automatically, in the workflow task that
// checked it, keeps the head that check read.
func TestDiffBasePinnedAtApproval(t *testing.T) {
	for _, tt := range []struct {
		name   string
		risk   amp.Risk
		checks int
		base   string
	}{
		{"Automatic", amp.RiskLow, 1, "aaaa1111"},
		{"ByAdmin", amp.RiskMedium, 2, "bbbb2222"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, testPlan(tt.risk, "S1"))
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
			start := time.Duration(0)
			if tt.risk != amp.RiskLow {
				h.at(time.Second, func() { h.decide("alice", decision.OptApprove, "") })
				start = time.Second
			}
			end := h.rejectRound(start)
			h.round(end)
			h.run()

			if calls != tt.checks || len(checked) != 2 {
				t.Fatalf("%d branch checks and %d result checks, want %d and 2", calls, len(checked), tt.checks)
			}
			for i, in := range checked {
				if in.Base != tt.base {
					t.Errorf("result check %d: base %q, want %s, the default head at approval", i, in.Base, tt.base)
				}
			}
		})
	}
}
