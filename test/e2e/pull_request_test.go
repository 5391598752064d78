package e2e

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/workflows/task"
)

// gitOverHTTP serves the bare repositories under root over git's smart
// HTTP protocol to x-access-token:token only, as GitHub does.
func gitOverHTTP(t *testing.T, root, token string) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("git --exec-path:", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skip("no git-http-backend:", err)
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=pusher"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "x-access-token" || p != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPullRequestDelivery runs a task from start to merged against a fake
// GitHub on loopback: the branch pushed over HTTP with the token, a draft
// pull request, the reviewer agent's approval making it ready, a GitHub
// approval, green checks, the squash merge into the origin's main, and the
// token in no record, log or file.
func TestPullRequestDelivery(t *testing.T) {
	const token = "ghs_e2eDeliveryToken0123456789"
	const id = "T-2026-931"
	bare, repo := githubtest.Origin(t)
	gitURL := gitOverHTTP(t, filepath.Dir(bare), token)
	git(t, repo, "remote", "set-url", "origin", gitURL+"/"+filepath.Base(bare))
	git(t, repo, "checkout", "-q", "-b", "feature/e2e")
	gh := githubtest.New(t, githubtest.Options{Token: token, Origin: bare})
	gh.SetPermission("octo-reviewer", "write")

	dataDir := t.TempDir()
	p := startDev(t, dataDir,
		"AMPFLOW_CI_PROVIDER=github", "AMPFLOW_CI_GITHUB_TOKEN="+token, "AMPFLOW_CI_GITHUB_API_URL="+gh.URL,
		"AMPFLOW_CI_GITHUB_REPO=acme/widget", "AMPFLOW_CI_POLL_INTERVAL=1s",
		"AMPFLOW_DELIVERY_PUSH=true", "AMPFLOW_DELIVERY_PULL_REQUEST=draft", "AMPFLOW_DELIVERY_MERGE=squash",
		"AMPFLOW_DELIVERY_GITHUB_TOKEN_ENV=E2E_GITHUB_TOKEN", "E2E_GITHUB_TOKEN="+token,
		"AMPFLOW_DELIVERY_GITHUB_APPROVALS=1", "AMPFLOW_DELIVERY_GITHUB_POLL=1s",
		"AMPFLOW_DASHBOARD_ENABLED=true")
	api := newFaultAPI(t, p)
	a := &agent{t: t, tasks: dial(t, p), repo: repo}

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
	gh.AddReview("acme", "widget", 1, "octo-reviewer", "APPROVED", "LGTM")

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
	for _, ev := range []string{"push", "pull_request_opened", "pull_request_ready", "github_review", "merge"} {
		if kinds[ev] != 1 {
			t.Errorf("%d %s records, want 1 (all: %v)", kinds[ev], ev, kinds)
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
