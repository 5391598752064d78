package e2e

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// prSetup is a task repository whose origin is a bare repository served
// over HTTP behind a token, a fake GitHub on loopback that reads the same
// bare repository, and an ampflow dev delivering to both.
type prSetup struct {
	bare, repo, dataDir string
	gh                  *githubtest.Server
	p                   *devProc
	api                 *apiClient
	a                   *agent
}

func newPRSetup(t *testing.T, token string, env ...string) *prSetup {
	t.Helper()
	s := &prSetup{dataDir: t.TempDir()}
	s.bare, s.repo = githubtest.Origin(t)
	gitURL := githubtest.GitHTTP(t, filepath.Dir(s.bare), token)
	git(t, s.repo, "remote", "set-url", "origin", gitURL+"/"+filepath.Base(s.bare))
	git(t, s.repo, "checkout", "-q", "-b", "feature/e2e")
	s.gh = githubtest.New(t, githubtest.Options{Token: token, Origin: s.bare})
	s.p = startDev(t, s.dataDir, append([]string{
		"AMPFLOW_CI_GITHUB_API_URL=" + s.gh.URL, "AMPFLOW_CI_GITHUB_REPO=acme/widget",
		"AMPFLOW_DELIVERY_PUSH=true", "AMPFLOW_DELIVERY_PULL_REQUEST=draft",
		"AMPFLOW_DELIVERY_GITHUB_TOKEN_ENV=E2E_GITHUB_TOKEN", "E2E_GITHUB_TOKEN=" + token,
		"AMPFLOW_DELIVERY_GITHUB_POLL=1s", "AMPFLOW_DASHBOARD_ENABLED=true"}, env...)...)
	s.api = newAPIClient(t, s.p.api, "")
	s.a = &agent{t: t, tasks: dial(t, s.p), repo: s.repo}
	return s
}

// TestPullRequestDelivery runs a task from start to merged against a fake
// GitHub on loopback: the branch pushed over HTTP with the token, a draft
// pull request, the reviewer agent's approval making it ready, "changes
// requested" on GitHub sent to the executor, a merge conflict resolved by
// a rebase round, a GitHub approval, green checks, the squash merge into
// the origin's main, and the token in no record, log or file.
func TestPullRequestDelivery(t *testing.T) {
	const token = "ghs_e2eDeliveryToken0123456789"
	const id = "T-2026-931"
	s := newPRSetup(t, token,
		"AMPFLOW_CI_PROVIDER=github", "AMPFLOW_CI_GITHUB_TOKEN="+token, "AMPFLOW_CI_POLL_INTERVAL=1s",
		"AMPFLOW_DELIVERY_MERGE=squash", "AMPFLOW_DELIVERY_GITHUB_APPROVALS=1")
	bare, repo, gh, dataDir, p, api, a := s.bare, s.repo, s.gh, s.dataDir, s.p, s.api, s.a
	gh.SetPermission("octo-reviewer", "write")

	api.startTask(id, lowRiskPlan(repo))
	d := a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
	a.ack(d)
	res := a.work(d, "hello.txt", "hello\n")
	commit := res.Result().CommitHash
	gh.AddCheckRun("acme", "widget", commit, "test", "success", githubtest.CheckOutput{Title: "ok"}, nil, nil, "")
	a.send(res)

	st := api.waitFor(id, "pull request opened", 90*time.Second, func(st task.State) bool { return st.PullRequest != "" })
	pulls := gh.Pulls()
	if len(pulls) != 1 || !pulls[0].Draft || pulls[0].Head.SHA != commit || pulls[0].HTMLURL != st.PullRequest {
		t.Fatalf("pull requests %+v, state %q", pulls, st.PullRequest)
	}
	if got := githubtest.Git(t, bare, "rev-parse", "refs/heads/feature/e2e"); got != commit {
		t.Errorf("origin's feature/e2e at %s, want the result %s", got, commit)
	}
	for _, want := range []string{"Add a greeting file", "- [ ] hello.txt says hello", "/tasks/" + id} {
		if !strings.Contains(pulls[0].Body, want) {
			t.Errorf("pull request body lacks %q:\n%s", want, pulls[0].Body)
		}
	}

	req := a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
	a.ack(req)
	a.send(a.verdict(req, amp.DecisionApproved))
	eventually(t, 60*time.Second, "the pull request ready for review", func() (bool, error) {
		return !gh.Pulls()[0].Draft, nil
	})

	// "Changes requested" on GitHub is a review round for the executor.
	gh.AddReview("acme", "widget", 1, "octo-reviewer", "CHANGES_REQUESTED", "Not quite.",
		githubtest.ReviewComment{Path: "hello.txt", Line: 1, Body: "capitalize Hello"})
	d = a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
	if desc := d.Dispatch().Description; !strings.Contains(desc, "hello.txt:1 capitalize Hello (octo-reviewer)") || !strings.Contains(desc, "Not quite.") {
		t.Errorf("the fix dispatch lacks the review:\n%s", desc)
	}
	a.ack(d)
	res = a.work(d, "hello.txt", "Hello\n")
	commit = res.Result().CommitHash
	gh.AddCheckRun("acme", "widget", commit, "test", "success", githubtest.CheckOutput{Title: "ok"}, nil, nil, "")
	a.send(res)
	req = a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
	a.ack(req)
	a.send(a.verdict(req, amp.DecisionApproved))

	// Meanwhile main moves on with a conflicting hello.txt.
	other := t.TempDir()
	githubtest.Git(t, other, "clone", "-q", bare, "c")
	other = filepath.Join(other, "c")
	writeFile(t, filepath.Join(other, "hello.txt"), "Bonjour\n")
	githubtest.Git(t, other, "add", ".")
	githubtest.Git(t, other, "commit", "-q", "-m", "main says bonjour")
	githubtest.Git(t, other, "push", "-q", "origin", "HEAD:main")

	approveHead := func(commit string) {
		t.Helper()
		eventually(t, 60*time.Second, "the branch pushed at "+commit, func() (bool, error) {
			return githubtest.Git(t, bare, "rev-parse", "refs/heads/feature/e2e") == commit, nil
		})
		gh.AddReview("acme", "widget", 1, "octo-reviewer", "APPROVED", "LGTM")
	}
	approveHead(commit)

	// The merge conflicts: the executor rebases, in a round of its own.
	d = a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
	if desc := d.Dispatch().Description; !strings.Contains(desc, "rebase feature/e2e onto origin/main") {
		t.Errorf("the conflict dispatch does not ask for a rebase:\n%s", desc)
	}
	a.ack(d)
	git(t, repo, "fetch", "-q", bare, "main:refs/remotes/origin/main")
	// The branch's side wins each conflicting hunk.
	git(t, repo, "rebase", "-q", "-X", "theirs", "origin/main")
	if got := git(t, repo, "show", "HEAD:hello.txt"); got != "Hello" {
		t.Fatalf("hello.txt after the rebase: %q", got)
	}
	res = report(a, d)
	commit = res.Result().CommitHash
	gh.AddCheckRun("acme", "widget", commit, "test", "success", githubtest.CheckOutput{Title: "ok"}, nil, nil, "")
	a.send(res)
	req = a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
	a.ack(req)
	a.send(a.verdict(req, amp.DecisionApproved))
	approveHead(commit)

	st = api.done(id, 90*time.Second)
	main := githubtest.Git(t, bare, "rev-parse", "refs/heads/main")
	if st.MergeCommit == "" || st.MergeCommit != main {
		t.Errorf("merge commit %q, origin's main %s", st.MergeCommit, main)
	}
	if pr := gh.Pulls()[0]; !pr.Merged || pr.MergeCommitSHA != main {
		t.Errorf("pull request after the task: %+v", pr)
	}
	if out, _, code := cli(t, p, nil, "task", "show", id); code != 0 || !strings.Contains(out, st.PullRequest) {
		t.Errorf("task show (exit %d) lacks the pull request:\n%s", code, out)
	}

	// The SSOT chain has the push, the pull request, the review and the
	// merge, each once.
	kinds := map[string]int{}
	for _, r := range ssotHistory(t, dataDir, id) {
		var body struct {
			Event string `json:"event"`
		}
		if json.Unmarshal(r.Body, &body) == nil && body.Event != "" {
			kinds[body.Event]++
		}
		if strings.Contains(string(r.Body), token) {
			t.Errorf("record %s holds the token", r.ID)
		}
	}
	want := map[string]int{"push": 3, "pull_request_opened": 1, "pull_request_ready": 1, "pull_request_updated": 2,
		"github_review": 3, "merge_conflict": 1, "merge": 1}
	for ev, n := range want {
		if kinds[ev] != n {
			t.Errorf("%d %s records, want %d (all: %v)", kinds[ev], ev, n, kinds)
		}
	}

	// The token was used, and is nowhere ampflow writes.
	used := false
	for _, r := range gh.Requests() {
		used = used || r.Header.Get("Authorization") == "Bearer "+token
	}
	if !used {
		t.Error("the fake GitHub never saw the token")
	}
	p.stop()
	if strings.Contains(p.output(), token) {
		t.Error("ampflow dev's output holds the token")
	}
	for _, dir := range []string{dataDir, filepath.Join(repo, ".git")} {
		_ = filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), token) {
				t.Errorf("%s holds the token", path)
			}
			return nil
		})
	}
}

// TestPullRequestKilledBeforeOpening kills ampflow dev with SIGKILL after
// the push, while GitHub is creating the pull request: after the restart
// the task finds that pull request rather than opening a second.
func TestPullRequestKilledBeforeOpening(t *testing.T) {
	// Most of its time is the wait for the killed worker's activity to time
	// out; it runs beside the other tests that wait so.
	t.Parallel()
	const token = "ghs_e2eKillToken0123456789"
	const id = "T-2026-932"
	s := newPRSetup(t, token)
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.gh.SetHook(func(_ http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost && r.URL.Path == "/api/v3/repos/acme/widget/pulls" {
			once.Do(func() {
				close(arrived)
				<-release
			})
		}
		return false
	})
	s.api.startTask(id, lowRiskPlan(s.repo))
	d := s.a.next(amp.RoleExecutor, id, amp.TypeTaskDispatch)
	s.a.ack(d)
	res := s.a.work(d, "hello.txt", "hello\n")
	s.a.send(res)
	select {
	case <-arrived:
	case <-time.After(90 * time.Second):
		t.Fatal("the pull request was not asked for")
	}
	if got := githubtest.Git(t, s.bare, "rev-parse", "refs/heads/feature/e2e"); got != res.Result().CommitHash {
		t.Fatalf("origin's branch at %s before the pull request, want the pushed result", got)
	}
	s.p.kill()
	close(release) // GitHub goes on creating it
	eventually(t, 10*time.Second, "the pull request created", func() (bool, error) { return len(s.gh.Pulls()) == 1, nil })
	s.p.restart()
	restarted := time.Now()
	s.a.tasks = dial(t, s.p)

	st := s.api.waitFor(id, "pull request recorded", 3*time.Minute, func(st task.State) bool { return st.PullRequest != "" })
	t.Logf("restart to the pull request found and recorded: %s", time.Since(restarted).Round(10*time.Millisecond))
	if pulls := s.gh.Pulls(); len(pulls) != 1 || pulls[0].HTMLURL != st.PullRequest {
		t.Fatalf("pull requests %+v, task has %q; want exactly one", pulls, st.PullRequest)
	}
	found := 0
	for _, r := range ssotHistory(t, s.dataDir, id) {
		if strings.Contains(string(r.Body), `"pull_request_found"`) {
			found++
		}
		if strings.Contains(string(r.Body), `"pull_request_opened"`) {
			t.Errorf("record %s says the task opened a pull request the retry found", r.ID)
		}
	}
	if found != 1 {
		t.Errorf("%d pull_request_found records, want 1", found)
	}
}

// report tells of the executor's HEAD as its result, for work done with
// git directly (a rebase).
func report(a *agent, d amp.Message) amp.Message {
	a.t.Helper()
	files, added, removed := numstat(a.t, a.repo)
	yes := true
	p := &amp.TaskResult{
		SubtaskID:        d.Dispatch().Subtasks[0].SubtaskID,
		CompletionStatus: amp.StatusComplete,
		DiffSummary:      amp.DiffSummary{FilesChanged: files, LinesAdded: added, LinesRemoved: removed},
		SelfAssessment:   amp.SelfAssessment{CriteriaMet: []*bool{&yes}, Notes: []string{"rebased"}},
		WorkLog:          []amp.WorkLogEntry{{Timestamp: time.Now().UTC().Format(time.RFC3339), Action: "rebase", File: "hello.txt", Detail: "onto origin/main"}},
		CommitHash:       git(a.t, a.repo, "rev-parse", "HEAD"),
	}
	return amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, d.TaskID, time.Now(), p)
}
