package intake

import (
	"context"
	"errors"
	"testing"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// fakeIssues answers one issue under the ETag "e1", 304 to "e1".
type fakeIssues struct {
	GitHubAPI
	asked []string // the If-None-Match of each listing
}

func (f *fakeIssues) Issues(_ context.Context, _, _ string, _ github.IssueQuery, etag string) ([]github.Issue, string, bool, error) {
	f.asked = append(f.asked, etag)
	if etag == "e1" {
		return nil, etag, true, nil
	}
	return []github.Issue{{Number: 100, Title: "Add it", State: "open", Labels: []string{"ampflow"}, URL: "https://github.com/acme/widget/issues/100"}}, "e1", false, nil
}

// TestPollRetriesAFailedStart: a list whose issue failed to start is read
// whole again, not answered 304 for ever; once started, it costs a 304.
func TestPollRetriesAFailedStart(t *testing.T) {
	api := &fakeIssues{}
	var starts []task.Input
	g := &GitHub{Config: config.IntakeGitHub{Label: "ampflow", Risk: "low", Repos: []config.IntakeRepo{{Name: "acme/widget", Repo: "/srv/widget"}}}, API: api,
		Start: func(_ context.Context, in task.Input) (string, bool, error) {
			starts = append(starts, in)
			if len(starts) == 1 {
				return "", false, errors.New("the SSOT is away")
			}
			return "T-2026-001", true, nil
		}}
	for range 3 {
		g.Poll(context.Background())
	}
	if len(api.asked) != 3 || api.asked[0] != "" || api.asked[1] != "" || api.asked[2] != "e1" {
		t.Errorf("If-None-Match of the listings: %q, want \"\", \"\" (after the failure), e1", api.asked)
	}
	if len(starts) != 2 || starts[1].Origin.ExternalID != "acme/widget#100" || !starts[1].CreateBranch || starts[1].Plan.Branch != "ampflow/issue-100-add-it" {
		t.Errorf("starts %+v", starts)
	}
}
