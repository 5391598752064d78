package workflows

import (
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
)

// TestGitHubRepoFixedAtStart: the GitHub repository CheckBranch finds
// when the task starts is the one every later CI read and result check
// is given, so nothing read from the repository afterwards can move it.
func TestGitHubRepoFixedAtStart(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
		return activities.CheckBranchResult{DefaultBranch: "main", Head: "abc", GitHubRepo: "github.com/acme/widget"}, nil
	}
	var checked []activities.CheckResultInput
	h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
		checked = append(checked, in)
		return activities.CheckResultOutput{Commit: in.Commit, Actual: in.Claimed, DiffURL: "/d.diff"}, nil
	}
	end := h.rejectRound(0)
	h.round(end)
	h.run()

	if len(h.ciInputs) != 2 || len(checked) != 2 {
		t.Fatalf("%d CI reads and %d result checks, want 2 of each", len(h.ciInputs), len(checked))
	}
	for i, in := range h.ciInputs {
		if in.GitHubRepo != "github.com/acme/widget" {
			t.Errorf("CI read %d: github_repo %q, want the one recorded at start", i, in.GitHubRepo)
		}
	}
	for i, in := range checked {
		if in.GitHubRepo != "github.com/acme/widget" {
			t.Errorf("result check %d: github_repo %q, want the one recorded at start", i, in.GitHubRepo)
		}
	}
	if st := h.state(); st.CIRepo != "github.com/acme/widget" {
		t.Errorf("state ci_repo %q, want the task to show its repository", st.CIRepo)
	}
}
