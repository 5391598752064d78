package github_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/activities/github/githubtest"
)

// branch commits a file on a new branch of clone and pushes it.
func branch(t *testing.T, clone, name, file, text string) string {
	t.Helper()
	githubtest.Git(t, clone, "checkout", "-q", "-B", name, "origin/main")
	if err := os.WriteFile(filepath.Join(clone, file), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	githubtest.Git(t, clone, "add", ".")
	githubtest.Git(t, clone, "commit", "-q", "-m", "change "+file)
	githubtest.Git(t, clone, "push", "-q", "-f", "origin", "HEAD:refs/heads/"+name)
	return githubtest.Git(t, clone, "rev-parse", "HEAD")
}

func client(t *testing.T, srv *githubtest.Server) *github.Client {
	t.Helper()
	c, err := github.New(github.Options{Token: "tok", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPullLifecycle(t *testing.T) {
	ctx := context.Background()
	bare, clone := githubtest.Origin(t)
	head := branch(t, clone, "feature/x", "a.txt", "a\n")
	srv := githubtest.New(t, githubtest.Options{Token: "tok", Origin: bare})
	c := client(t, srv)

	if p, err := c.FindPull(ctx, "acme", "widget", "feature/x"); err != nil || p != nil {
		t.Fatalf("FindPull before creating = %v, %v; want none", p, err)
	}
	p, err := c.CreatePull(ctx, "acme", "widget", github.NewPull{Title: "T", Body: "B", Head: "feature/x", Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Number != 1 || !p.Draft || p.HeadSHA != head || !strings.HasSuffix(p.URL, "/acme/widget/pull/1") {
		t.Errorf("created %+v", p)
	}
	if _, err := c.CreatePull(ctx, "acme", "widget", github.NewPull{Title: "T", Head: "feature/x", Base: "main"}); err == nil {
		t.Error("a second pull request of the same head was accepted")
	}
	found, err := c.FindPull(ctx, "acme", "widget", "feature/x")
	if err != nil || found == nil || found.Number != 1 {
		t.Fatalf("FindPull = %v, %v", found, err)
	}
	if _, err := c.UpdatePull(ctx, "acme", "widget", 1, "T2", "B2"); err != nil {
		t.Fatal(err)
	}
	if err := c.MarkReady(ctx, p.NodeID); err != nil {
		t.Fatal(err)
	}
	got := srv.Pulls()[0]
	if got.Title != "T2" || got.Body != "B2" || got.Draft {
		t.Errorf("after update and ready: %+v", got)
	}

	// Reviews: an ETag makes an unchanged list free.
	reviews, etag, nm, err := c.Reviews(ctx, "acme", "widget", 1, "")
	if err != nil || nm || len(reviews) != 0 || etag == "" {
		t.Fatalf("Reviews = %v, %q, %v, %v", reviews, etag, nm, err)
	}
	if _, again, nm, err := c.Reviews(ctx, "acme", "widget", 1, etag); err != nil || !nm || again != etag {
		t.Fatalf("Reviews with ETag = %q, %v, %v; want not modified", again, nm, err)
	}
	id := srv.AddReview("acme", "widget", 1, "alice", "CHANGES_REQUESTED", "please fix",
		githubtest.ReviewComment{Path: "a.txt", Line: 1, Body: "say b"})
	reviews, etag2, nm, err := c.Reviews(ctx, "acme", "widget", 1, etag)
	if err != nil || nm || len(reviews) != 1 || etag2 == etag {
		t.Fatalf("Reviews after a review = %v, %v, %v", reviews, nm, err)
	}
	if r := reviews[0]; r.ID != id || r.User != "alice" || r.State != "CHANGES_REQUESTED" || r.CommitID != head {
		t.Errorf("review %+v", r)
	}
	comments, err := c.ReviewComments(ctx, "acme", "widget", 1, id)
	if err != nil || len(comments) != 1 || comments[0].Path != "a.txt" || comments[0].Line != 1 || comments[0].Body != "say b" {
		t.Fatalf("ReviewComments = %+v, %v", comments, err)
	}
	srv.SetPermission("alice", "maintain")
	if ok, err := c.CanWrite(ctx, "acme", "widget", "alice"); err != nil || !ok {
		t.Errorf("CanWrite(alice) = %v, %v", ok, err)
	}
	if ok, err := c.CanWrite(ctx, "acme", "widget", "mallory"); err != nil || ok {
		t.Errorf("CanWrite(mallory) = %v, %v", ok, err)
	}

	// Merges: a stale head is 409, a conflict 405, else a real commit.
	if _, err := c.Merge(ctx, "acme", "widget", 1, strings.Repeat("0", 40), "squash", ""); !errors.Is(err, github.ErrHeadModified) {
		t.Errorf("merge of a stale head: %v", err)
	}
	srv.SetConflict(1, true)
	if _, err := c.Merge(ctx, "acme", "widget", 1, head, "squash", ""); !errors.Is(err, github.ErrNotMergeable) {
		t.Errorf("merge in conflict: %v", err)
	}
	srv.SetConflict(1, false)
	sha, err := c.Merge(ctx, "acme", "widget", 1, head, "squash", "")
	if err != nil {
		t.Fatal(err)
	}
	if main := githubtest.Git(t, bare, "rev-parse", "refs/heads/main"); main != sha {
		t.Errorf("main is %s, merge commit %s", main, sha)
	}
	if after, err := c.GetPull(ctx, "acme", "widget", 1); err != nil || !after.Merged || after.State != "closed" {
		t.Errorf("after merge: %+v, %v", after, err)
	}
}

func TestMergeConflictFromGit(t *testing.T) {
	ctx := context.Background()
	bare, clone := githubtest.Origin(t)
	branch(t, clone, "feature/y", "README.md", "from the branch\n")
	githubtest.Git(t, clone, "checkout", "-q", "-B", "other", "origin/main")
	if err := os.WriteFile(filepath.Join(clone, "README.md"), []byte("from main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	githubtest.Git(t, clone, "commit", "-q", "-am", "main moves")
	githubtest.Git(t, clone, "push", "-q", "origin", "HEAD:refs/heads/main")
	srv := githubtest.New(t, githubtest.Options{Token: "tok", Origin: bare})
	c := client(t, srv)
	p, err := c.CreatePull(ctx, "acme", "widget", github.NewPull{Title: "T", Head: "feature/y", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Merge(ctx, "acme", "widget", p.Number, p.HeadSHA, "merge", ""); !errors.Is(err, github.ErrNotMergeable) {
		t.Errorf("merge of conflicting branches: %v, want ErrNotMergeable", err)
	}
}

func TestFailedChecks(t *testing.T) {
	ctx := context.Background()
	srv := githubtest.New(t, githubtest.Options{Token: "tok"})
	sha := strings.Repeat("ab", 20)
	srv.AddCheckRun("acme", "widget", sha, "lint", "success", githubtest.CheckOutput{Title: "ok"}, nil, nil, "")
	log := "2026-01-01T00:00:00Z ##[group]Run go build\nok\n##[endgroup]\n##[group]Run go test\n--- FAIL: TestX\n    x_test.go:9: got 1\n##[error]Process completed with exit code 1.\nCleaning up\n"
	srv.AddCheckRun("acme", "widget", sha, "test", "failure",
		githubtest.CheckOutput{Title: "1 test failed", Summary: "TestX failed"},
		[]githubtest.Annotation{{Path: "x_test.go", StartLine: 9, EndLine: 9, Level: "failure", Message: "got 1"}},
		[]githubtest.Step{{Name: "build", Conclusion: "success", Number: 1}, {Name: "go test", Conclusion: "failure", Number: 2}}, log)
	fails, err := client(t, srv).FailedChecks(ctx, "acme", "widget", sha, 80)
	if err != nil {
		t.Fatal(err)
	}
	if len(fails) != 1 {
		t.Fatalf("failed checks %+v", fails)
	}
	f := fails[0]
	if f.Name != "test" || f.Summary != "TestX failed" || f.FailedStep != "go test" || len(f.Annotations) != 1 || f.Annotations[0].Line != 9 {
		t.Errorf("failed check %+v", f)
	}
	if !strings.HasSuffix(f.LogTail, "##[error]Process completed with exit code 1.") || len(f.LogTail) > 80 || strings.Contains(f.LogTail, "Cleaning up") {
		t.Errorf("log tail %q", f.LogTail)
	}
	fetched := false
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r.Path, "/_logs/") {
			fetched = true
			if r.Header.Get("Authorization") != "" {
				t.Errorf("the pre-signed log URL got the token: %v", r.Header)
			}
		}
	}
	if !fetched {
		t.Error("the job log was not fetched")
	}
}

func TestLogTail(t *testing.T) {
	tests := []struct {
		log  string
		n    int
		want string
	}{
		{"a\nb\nc\n", 100, "a\nb\nc"},
		{"a\nbb\ncc\n", 5, "cc"},
		{"x\n##[error]boom\ny\n", 100, "x\n##[error]boom"},
		{"", 10, ""},
	}
	for _, tc := range tests {
		if got := github.LogTail(tc.log, tc.n); got != tc.want {
			t.Errorf("LogTail(%q, %d) = %q, want %q", tc.log, tc.n, got, tc.want)
		}
	}
}
