package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/activities/gittest"
)

func newPulls(t *testing.T, srv *githubtest.Server, reviewers ...string) *PullRequests {
	t.Helper()
	c, err := github.New(github.Options{Token: "tok", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &PullRequests{API: c, Reviewers: reviewers, DashboardURL: "http://127.0.0.1:7480/dashboard"}
}

func TestPullRequestsSync(t *testing.T) {
	ctx := context.Background()
	bare, clone := githubtest.Origin(t)
	gittest.Git(t, clone, "checkout", "-q", "-b", "feature/x")
	head := gittest.CommitFiles(t, clone, "work", map[string]string{"a.go": "package a\n"})
	gittest.Git(t, clone, "push", "-q", "origin", "feature/x")
	srv := githubtest.New(t, githubtest.Options{Token: "tok", Origin: bare})
	p := newPulls(t, srv)
	in := PullRequestInput{TaskID: "T-2026-007", GitHubRepo: "github.com/acme/widget", Branch: "feature/x", Base: "main", Draft: true,
		Description: "Add the parser\nwith details", Criteria: []string{"parses x", "tests pass"}, Subtasks: []string{"write it"}}
	first, err := p.Sync(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Created || first.Number != 1 || !first.Draft {
		t.Errorf("first sync %+v", first)
	}
	// A worker that died after opening it: the retry (Number still 0)
	// finds the open pull request rather than opening a second.
	again, err := p.Sync(ctx, in)
	if err != nil || again.Created || again.Number != 1 {
		t.Fatalf("retried sync %+v, %v", again, err)
	}
	in.Number, in.Done, in.Ready = 1, 1, true
	ready, err := p.Sync(ctx, in)
	if err != nil || ready.Draft {
		t.Fatalf("ready sync %+v, %v", ready, err)
	}
	pulls := srv.Pulls()
	if len(pulls) != 1 {
		t.Fatalf("%d pull requests, want 1", len(pulls))
	}
	pr := pulls[0]
	if pr.Title != "Add the parser [T-2026-007]" || pr.Draft || pr.Head.SHA != head {
		t.Errorf("pull request %+v", pr)
	}
	for _, want := range []string{"- [x] write it", "### Acceptance criteria", "- [x] parses x", "http://127.0.0.1:7480/dashboard/tasks/T-2026-007", TaskMarker("T-2026-007")} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}

	t.Run("Reviews", func(t *testing.T) {
		srv.SetPermission("alice", "write")
		rin := ReviewsInput{TaskID: "T-2026-007", GitHubRepo: "github.com/acme/widget", Number: 1, Head: head}
		res, err := p.Reviews(ctx, rin)
		if err != nil || len(res.Reviews) != 0 || res.ETag == "" {
			t.Fatalf("no reviews: %+v, %v", res, err)
		}
		rin.ETag = res.ETag
		if res, err := p.Reviews(ctx, rin); err != nil || !res.NotModified {
			t.Fatalf("unchanged: %+v, %v", res, err)
		}
		srv.AddReview("acme", "widget", 1, "mallory", "CHANGES_REQUESTED", "no") // no write access
		srv.AddReview("acme", "widget", 1, "alice", "COMMENTED", "fine")
		id := srv.AddReview("acme", "widget", 1, "alice", "CHANGES_REQUESTED", "fix it",
			githubtest.ReviewComment{Path: "a.go", Line: 1, Body: "name the package"})
		res, err = p.Reviews(ctx, rin)
		if err != nil || res.NotModified || len(res.Reviews) != 1 {
			t.Fatalf("after reviews: %+v, %v", res, err)
		}
		r := res.Reviews[0]
		if r.ID != id || r.User != "alice" || len(r.Comments) != 1 || r.Comments[0].Path != "a.go" || r.Comments[0].Line != 1 {
			t.Errorf("review %+v", r)
		}
		rin.ETag, rin.Taken = res.ETag, []int64{id}
		srv.AddReview("acme", "widget", 1, "alice", "APPROVED", "")
		res, err = p.Reviews(ctx, rin)
		if err != nil || len(res.Reviews) != 1 || res.Reviews[0].State != "APPROVED" {
			t.Fatalf("approval: %+v, %v", res, err)
		}
		// With a reviewers list, only those count.
		only := newPulls(t, srv, "bob")
		if res, err := only.Reviews(ctx, ReviewsInput{TaskID: "T-2026-007", GitHubRepo: "github.com/acme/widget", Number: 1, Head: head}); err != nil || len(res.Reviews) != 0 {
			t.Errorf("reviewers [bob]: %+v, %v", res, err)
		}
	})

	t.Run("Merge", func(t *testing.T) {
		min := MergeInput{TaskID: "T-2026-007", GitHubRepo: "github.com/acme/widget", Number: 1, Commit: head, Method: "squash"}
		srv.SetConflict(1, true)
		res, err := p.Merge(ctx, min)
		if err != nil || res.Conflict == "" {
			t.Fatalf("conflict: %+v, %v", res, err)
		}
		srv.SetConflict(1, false)
		res, err = p.Merge(ctx, min)
		if err != nil || res.SHA == "" {
			t.Fatalf("merge: %+v, %v", res, err)
		}
		if main := githubtest.Git(t, bare, "rev-parse", "refs/heads/main"); main != res.SHA {
			t.Errorf("main at %s, merge %s", main, res.SHA)
		}
		// A retried merge answers the same commit.
		if again, err := p.Merge(ctx, min); err != nil || again.SHA != res.SHA {
			t.Errorf("retried merge %+v, %v", again, err)
		}
	})
}

func TestPullRequestsNoRepo(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{Token: "tok"})
	_, err := newPulls(t, srv).Sync(context.Background(), PullRequestInput{TaskID: "T-2026-007", Branch: "x", Base: "main"})
	appErr(t, err, ErrDeliveryConfig, true)
}
