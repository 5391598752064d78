package github_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/activities/github/githubtest"
)

// TestIssues reads labelled and assigned issues with ETags, comments on
// one and closes it, against the fake GitHub.
func TestIssues(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t, githubtest.Options{Token: "tok"})
	c := client(t, srv)
	labelled := srv.AddIssue("acme", "widget", "Add MemberCount", "Body\n- [ ] it counts", []string{"ampflow", "risk:medium"}, nil)
	assigned := srv.AddIssue("acme", "widget", "Fix it", "", nil, []string{"ampflow-bot"})
	srv.AddIssue("acme", "widget", "Not for us", "", []string{"bug"}, nil)

	list, etag, notModified, err := c.Issues(ctx, "acme", "widget", github.IssueQuery{Label: "ampflow"}, "")
	if err != nil || notModified || etag == "" {
		t.Fatalf("Issues = %v, %q, %v", err, etag, notModified)
	}
	if len(list) != 1 || list[0].Number != labelled.Number || list[0].URL != labelled.HTMLURL || strings.Join(list[0].Labels, ",") != "ampflow,risk:medium" {
		t.Fatalf("labelled issues %+v", list)
	}
	if _, again, notModified, err := c.Issues(ctx, "acme", "widget", github.IssueQuery{Label: "ampflow"}, etag); err != nil || !notModified || again != etag {
		t.Fatalf("an unchanged list: notModified %v, %v", notModified, err)
	}
	srv.LabelIssue("acme", "widget", assigned.Number, "ampflow")
	if list, _, notModified, _ := c.Issues(ctx, "acme", "widget", github.IssueQuery{Label: "ampflow"}, etag); notModified || len(list) != 2 {
		t.Fatalf("after a label: notModified %v, %d issues", notModified, len(list))
	}
	if list, _, _, _ := c.Issues(ctx, "acme", "widget", github.IssueQuery{Assignee: "ampflow-bot"}, ""); len(list) != 1 || list[0].Number != assigned.Number {
		t.Fatalf("assigned issues %+v", list)
	}

	for _, body := range []string{"first", "second"} {
		if err := c.CommentIssue(ctx, "acme", "widget", labelled.Number, body); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := c.IssueComments(ctx, "acme", "widget", labelled.Number); err != nil || strings.Join(got, ",") != "first,second" {
		t.Fatalf("comments %q, %v", got, err)
	}
	if err := c.CloseIssue(ctx, "acme", "widget", labelled.Number); err != nil {
		t.Fatal(err)
	}
	if is, err := c.GetIssue(ctx, "acme", "widget", labelled.Number); err != nil || is.State != "closed" {
		t.Fatalf("issue after closing: %+v, %v", is, err)
	}
	if list, _, _, _ := c.Issues(ctx, "acme", "widget", github.IssueQuery{Label: "ampflow"}, ""); len(list) != 1 {
		t.Fatalf("a closed issue is still listed: %+v", list)
	}
}
