package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/config"
)

func TestGitHubCIFailureDetail(t *testing.T) {
	repo, head := githubRepo(t)
	srv := githubtest.New(t, githubtest.Options{Token: "tok"})
	log := strings.Repeat("noise line\n", 2000) + "--- FAIL: TestParse\n    parse_test.go:12: token sk-live-SECRET leaked\n##[error]Process completed with exit code 1.\npost-job cleanup\n"
	srv.AddCheckRun("acme", "widget", head, "build", "success", githubtest.CheckOutput{}, nil, nil, "")
	srv.AddCheckRun("acme", "widget", head, "test", "failure",
		githubtest.CheckOutput{Title: "go test failed", Summary: "1 failing test"},
		[]githubtest.Annotation{{Path: "parse_test.go", StartLine: 12, EndLine: 12, Level: "failure", Message: "token mismatch"}},
		[]githubtest.Step{{Name: "checkout", Conclusion: "success", Number: 1}, {Name: "go test ./...", Conclusion: "failure", Number: 2}}, log)
	ci, err := NewCIProvider(config.ProviderGitHub, CIOptions{GitHubToken: "tok", GitHubBaseURL: srv.URL, Secrets: child.NewScrubber([]string{"sk-live-SECRET"})})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ci.Status(context.Background(), CIStatusInput{TaskID: "T-2026-001", Repo: repo, Branch: "feature/x", Commit: head, GitHubRepo: "github.com/acme/widget"})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != CIFailed {
		t.Fatalf("state %s", res.State)
	}
	for _, want := range []string{"## test: failure", "1 failing test", "- [failure] parse_test.go:12 token mismatch", "Failing step: go test ./...", "--- FAIL: TestParse", "##[error]Process completed"} {
		if !strings.Contains(res.Detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, res.Detail)
		}
	}
	if strings.Contains(res.Detail, "sk-live-SECRET") || strings.Contains(res.Detail, "post-job cleanup") {
		t.Errorf("detail shows a secret or what came after the error:\n%s", res.Detail)
	}
	if len(res.Detail) > ciDetailMax+100 || strings.Count(res.Detail, "noise line") > ciLogTail/len("noise line\n") {
		t.Errorf("detail is not bounded: %d bytes", len(res.Detail))
	}
}

func TestFailureDetailBound(t *testing.T) {
	big := github.FailedCheck{Name: "a", Conclusion: "failure", LogTail: strings.Repeat("x", 300)}
	got := failureDetail([]github.FailedCheck{big, big, big}, 400)
	if len(got) > 450 || !strings.Contains(got, "(2 more failed checks left out)") {
		t.Errorf("got %d bytes:\n%s", len(got), got)
	}
	got = failureDetail([]github.FailedCheck{big}, 100)
	if len(got) > 110 {
		t.Errorf("one check over the bound: %d bytes", len(got))
	}
}
