package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
)

func TestRollUp(t *testing.T) {
	ck := func(name string, o github.Outcome) github.Check { return github.Check{Name: name, Outcome: o} }
	tests := []struct {
		name     string
		checks   []github.Check
		noChecks CIState
		want     CIState
		failing  string
	}{
		{"NoChecksPending", nil, "", CIPending, ""},
		{"NoChecksConfigured", nil, CIPassed, CIPassed, ""},
		{"AllPassed", []github.Check{ck("a", github.OutcomePassed), ck("b", github.OutcomePassed)}, "", CIPassed, ""},
		{"OnePending", []github.Check{ck("a", github.OutcomePassed), ck("b", github.OutcomePending)}, "", CIPending, ""},
		{"FailedBeatsPending", []github.Check{ck("z", github.OutcomeFailed), ck("b", github.OutcomePending), ck("a", github.OutcomeFailed)}, "", CIFailed, "a,z"},
		{"SameNameWorseWins", []github.Check{ck("a", github.OutcomeFailed), ck("a", github.OutcomePassed)}, "", CIFailed, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := rollUp(tc.checks, tc.noChecks)
			if got.State != tc.want || strings.Join(got.Failing, ",") != tc.failing {
				t.Errorf("got %+v, want %s failing %q", got, tc.want, tc.failing)
			}
		})
	}
}

// githubRepo is a repository whose origin is acme/widget on GitHub, with
// feature/x pushed there.
func githubRepo(t *testing.T) (dir, head string) {
	t.Helper()
	dir = gittest.NewRepo(t, "main")
	gittest.Git(t, dir, "checkout", "-q", "-b", "feature/x")
	head = gittest.CommitFiles(t, dir, "work", map[string]string{"a.go": "package a\n"})
	gittest.Git(t, dir, "remote", "add", "origin", "git@github.com:acme/widget.git")
	gittest.Git(t, dir, "update-ref", "refs/remotes/origin/feature/x", head) // pushed
	return dir, head
}

func TestGitHubCIActivity(t *testing.T) {
	repo, head := githubRepo(t)
	reset := time.Now().Add(90 * time.Second)
	gh := githubtest.New(t, githubtest.Options{})
	gh.AddCheckRun("acme", "widget", head, "build", "success", githubtest.CheckOutput{}, nil, nil, "")
	gh.AddCheckRun("acme", "widget", head, "test", "failure", githubtest.CheckOutput{}, nil, nil, "")
	gh.AddStatus("acme", "widget", head, "ci/jenkins", "success")
	gh.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		switch r.Header.Get("Authorization") {
		case "Bearer limited":
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			http.Error(w, `{"message":"API rate limit exceeded"}`, http.StatusForbidden)
		case "Bearer gone":
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		default:
			return false
		}
		return true
	})

	// started is the repository CheckBranch records when the task starts.
	started := func(t *testing.T, g *Git) string {
		t.Helper()
		out, err := g.CheckBranch(context.Background(), CheckBranchInput{Repo: repo, Branch: "feature/x"})
		if err != nil {
			t.Fatal(err)
		}
		return out.GitHubRepo
	}
	runWith := func(token string, opts CIOptions, ghRepo string) (CIStatusResult, error) {
		opts.GitHubToken, opts.GitHubBaseURL = token, gh.URL
		ci, err := NewCIProvider(config.ProviderGitHub, opts)
		if err != nil {
			t.Fatal(err)
		}
		env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
		a := &Activities{CI: ci}
		env.RegisterActivity(a)
		val, err := env.ExecuteActivity(a.CIStatus, CIStatusInput{TaskID: "T-2026-001", Repo: repo, Branch: "feature/x", GitHubRepo: ghRepo})
		var res CIStatusResult
		if err == nil {
			err = val.Get(&res)
		}
		return res, err
	}
	ghRepo := started(t, &Git{})
	if ghRepo != "github.com/acme/widget" {
		t.Fatalf("CheckBranch recorded %q, want github.com/acme/widget", ghRepo)
	}
	run := func(token string) (CIStatusResult, error) { return runWith(token, CIOptions{}, ghRepo) }

	t.Run("Failing", func(t *testing.T) {
		res, err := run("tok")
		if err != nil {
			t.Fatal(err)
		}
		if res.State != CIFailed || strings.Join(res.Failing, ",") != "test" || res.Checks["ci/jenkins"] != "passed" {
			t.Errorf("got %+v", res)
		}
	})
	t.Run("RateLimited", func(t *testing.T) {
		_, err := run("limited")
		ae := appErr(t, err, ErrCIRateLimited, false)
		if d := ae.NextRetryDelay(); d < 80*time.Second || d > 95*time.Second {
			t.Errorf("NextRetryDelay = %v, want about 90s (until the reset)", d)
		}
	})
	t.Run("UnknownRepository", func(t *testing.T) {
		_, err := run("gone")
		ae := appErr(t, err, ErrCIConfig, true)
		if !strings.Contains(ae.Error(), "acme/widget") {
			t.Errorf("message %q does not name the repository", ae.Error())
		}
	})
	t.Run("NoToken", func(t *testing.T) {
		_, err := run("")
		ae := appErr(t, err, ErrCIConfig, true)
		if !strings.Contains(ae.Error(), "no token") {
			t.Errorf("message %q does not say the token is missing", ae.Error())
		}
	})
	// An executor edits .git/config after the start: CI still reads the
	// repository recorded then (only acme/widget answers here).
	t.Run("OriginChangedAfterStart", func(t *testing.T) {
		for _, remote := range []string{"git@github.com:mallory/widget.git", "/srv/git/widget.git"} {
			gittest.Git(t, repo, "remote", "set-url", "origin", remote)
			res, err := run("tok")
			if err != nil || res.State != CIFailed {
				t.Errorf("origin now %s: %+v, %v; want acme/widget's checks", remote, res, err)
			}
		}
		gittest.Git(t, repo, "remote", "set-url", "origin", "git@github.com:acme/widget.git")
	})
	t.Run("OriginNotGitHubAtStart", func(t *testing.T) {
		gittest.Git(t, repo, "remote", "set-url", "origin", "/srv/git/widget.git")
		notGitHub := started(t, &Git{})
		gittest.Git(t, repo, "remote", "set-url", "origin", "git@github.com:acme/widget.git")
		if notGitHub != "" {
			t.Fatalf("CheckBranch recorded %q for a non-GitHub origin", notGitHub)
		}
		_, err := runWith("tok", CIOptions{}, notGitHub)
		ae := appErr(t, err, ErrCIConfig, true)
		if !strings.Contains(ae.Error(), "ci.github.repo") {
			t.Errorf("message %q does not name the setting to change", ae.Error())
		}
	})
	// ci.github.repo wins over origin, both at the start and for a task
	// that recorded nothing.
	t.Run("Configured", func(t *testing.T) {
		gittest.Git(t, repo, "remote", "set-url", "origin", "git@github.com:mallory/widget.git")
		defer gittest.Git(t, repo, "remote", "set-url", "origin", "git@github.com:acme/widget.git")
		g := &Git{}
		opts := CIOptions{Git: g, GitHubRepo: "acme/widget"}
		if _, err := runWith("tok", opts, ""); err != nil {
			t.Errorf("a task with no recorded repository: %v, want ci.github.repo's checks", err)
		}
		rec := started(t, g)
		if !strings.HasSuffix(rec, "/acme/widget") {
			t.Fatalf("CheckBranch recorded %q, want ci.github.repo", rec)
		}
		if res, err := runWith("tok", opts, rec); err != nil || res.State != CIFailed {
			t.Errorf("%+v, %v; want acme/widget's checks", res, err)
		}
	})
}

func TestNewCIProvider(t *testing.T) {
	store := newSSOT(t)
	tests := []struct {
		kind    string
		opts    CIOptions
		wantErr bool
		want    string
	}{
		{"", CIOptions{}, false, "activities.NoCI"},
		{"none", CIOptions{}, false, "activities.NoCI"},
		{"github", CIOptions{}, false, "*activities.GitHubCI"},
		{"command", CIOptions{Command: []string{"true"}, Store: store}, false, "*activities.CommandCI"},
		{"command", CIOptions{Store: store}, true, ""},
		{"command", CIOptions{Command: []string{"true"}}, true, ""},
		{"jenkins", CIOptions{}, true, ""},
	}
	for _, tc := range tests {
		p, err := NewCIProvider(tc.kind, tc.opts)
		if (err != nil) != tc.wantErr || (err == nil && fmt.Sprintf("%T", p) != tc.want) {
			t.Errorf("NewCIProvider(%q) = %T, %v", tc.kind, p, err)
		}
	}
	res, err := NoCI{}.Status(context.Background(), CIStatusInput{})
	if err != nil || res.State != CINone {
		t.Errorf("NoCI = %+v, %v", res, err)
	}
}

// worktrees lists the repository's worktrees other than the main one.
func worktrees(t *testing.T, repo string) []string {
	t.Helper()
	var out []string
	for l := range strings.SplitSeq(gittest.Git(t, repo, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok && p != repo {
			out = append(out, p)
		}
	}
	return out
}

func TestCommandCI(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	repo, _ = filepath.EvalSymlinks(repo)
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/x")
	head := gittest.CommitFiles(t, repo, "work", map[string]string{"hello.txt": "hi\n"})
	store := newSSOT(t)
	counter := filepath.Join(t.TempDir(), "runs")
	in := CIStatusInput{TaskID: "T-2026-001", Repo: repo, Branch: "feature/x"}

	newCI := func(script string, timeout time.Duration) CIProvider {
		ci, err := NewCIProvider(config.ProviderCommand, CIOptions{
			Command: []string{"sh", "-c", script}, CommandTimeout: timeout,
			CommandEnv: []string{"COUNTER=" + counter}, Store: store,
		})
		if err != nil {
			t.Fatal(err)
		}
		return ci
	}

	t.Run("PassesOnceThenCached", func(t *testing.T) {
		ci := newCI(`echo run >> "$COUNTER"; test -f hello.txt && test "$(git rev-parse HEAD)" = "$AMPFLOW_COMMIT"`, time.Minute)
		for range 2 {
			res, err := ci.Status(context.Background(), in)
			if err != nil || res.State != CIPassed {
				t.Fatalf("got %+v, %v", res, err)
			}
			// The branch head, resolved; its whole log is kept.
			if res.Commit != head || !res.LogKept {
				t.Errorf("commit %q, log kept %v; want %s and the log kept", res.Commit, res.LogKept, head)
			}
		}
		if runs, _ := os.ReadFile(counter); string(runs) != "run\n" {
			t.Errorf("command ran %d times, want once", strings.Count(string(runs), "run"))
		}
		if _, err := store.CILog(context.Background(), in.TaskID, head); err != nil {
			t.Errorf("log not kept: %v", err)
		}
		if wt := worktrees(t, repo); len(wt) != 0 {
			t.Errorf("worktrees left behind: %v", wt)
		}
	})
	t.Run("Fails", func(t *testing.T) {
		ci := newCI(`for i in $(seq 1 2000); do echo "line $i"; done; echo boom >&2; exit 3`, time.Minute)
		res, err := ci.Status(context.Background(), in)
		if err != nil || res.State != CIFailed || len(res.Failing) != 1 {
			t.Fatalf("got %+v, %v", res, err)
		}
		if !strings.HasSuffix(res.Detail, "line 2000\nboom\n") || len(res.Detail) > commandTailBytes+len("…") || strings.Contains(res.Detail, "line 1\n") {
			t.Errorf("detail is not the tail of the output (%d bytes): %q…", len(res.Detail), res.Detail[:min(80, len(res.Detail))])
		}
		log, err := store.CILog(context.Background(), in.TaskID, head)
		if err != nil || !strings.Contains(string(log), "line 1\n") {
			t.Errorf("full log not kept: %v", err)
		}
		if wt := worktrees(t, repo); len(wt) != 0 {
			t.Errorf("worktrees left behind: %v", wt)
		}
	})
	t.Run("TimesOut", func(t *testing.T) {
		ci := newCI(`sleep 30 & wait`, 300*time.Millisecond)
		start := time.Now()
		res, err := ci.Status(context.Background(), CIStatusInput{TaskID: "T-2026-002", Repo: repo, Commit: head})
		if err != nil || res.State != CIFailed || !strings.Contains(res.Detail, "timed out") {
			t.Fatalf("got %+v, %v", res, err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("timeout took %v: the command's children were not killed", took)
		}
	})
	t.Run("CancelledCleansUp", func(t *testing.T) {
		ci := newCI(`sleep 30`, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := ci.Status(ctx, CIStatusInput{TaskID: "T-2026-003", Repo: repo, Commit: head})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the context's", err)
		}
		if wt := worktrees(t, repo); len(wt) != 0 {
			t.Errorf("worktrees left behind: %v", wt)
		}
		if _, ok, _ := store.cachedCI(context.Background(), "T-2026-003", head); ok {
			t.Error("a cancelled run must not be cached")
		}
	})
	t.Run("InActivityWithHeartbeats", func(t *testing.T) {
		ci := newCI(`sleep 0.3`, time.Minute)
		ci.(*CommandCI).HeartbeatEvery = 50 * time.Millisecond
		env := (&testsuite.WorkflowTestSuite{}).NewTestActivityEnvironment()
		a := &Activities{CI: ci}
		env.RegisterActivity(a)
		val, err := env.ExecuteActivity(a.CIStatus, CIStatusInput{TaskID: "T-2026-004", Repo: repo, Commit: head[:8]})
		var res CIStatusResult
		if err == nil {
			err = val.Get(&res)
		}
		if err != nil || res.State != CIPassed {
			t.Fatalf("got %+v, %v", res, err)
		}
	})
	t.Run("SeesNoSecrets", func(t *testing.T) {
		// The worker's environment holds its secrets; config names them.
		t.Setenv("AMPFLOW_AUTH_TOKENS", "tok-parent-s3cr3t:admin:ops")
		t.Setenv("AMPFLOW_CI_GITHUB_TOKEN", "ghp-parent-s3cr3t")
		t.Setenv("AMPFLOW_AUTH_DECISION_KEY", "dkey-parent")
		t.Setenv("AMPFLOW_TEMPORAL_API_KEY", "tkey-parent")
		t.Setenv("ALLOWED_VAR", "let-through")
		// Named in the allow list, ampflow's own settings stay behind.
		ci, err := NewCIProvider(config.ProviderCommand, CIOptions{
			Command:    []string{"sh", "-c", `env; echo "leak: ghp-parent-s3cr3t"; exit 1`},
			CommandEnv: []string{"ALLOWED_VAR", "SET_VAR=set", "AMPFLOW_AUTH_DECISION_KEY", "AMPFLOW_TEMPORAL_API_KEY", "AMPFLOW_AUTH_TOKENS"}, Store: store,
			Secrets: child.NewScrubber([]string{"tok-parent-s3cr3t", "ghp-parent-s3cr3t"}),
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ci.Status(context.Background(), CIStatusInput{TaskID: "T-2026-006", Repo: repo, Commit: head})
		if err != nil || res.State != CIFailed {
			t.Fatalf("got %+v, %v", res, err)
		}
		log, err := store.CILog(context.Background(), "T-2026-006", head)
		if err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"detail": res.Detail, "log": string(log)} {
			for _, bad := range []string{"s3cr3t", "AMPFLOW_AUTH_TOKENS", "AMPFLOW_CI_GITHUB_TOKEN", "dkey-parent", "tkey-parent"} {
				if strings.Contains(out, bad) {
					t.Errorf("%s shows %q:\n%s", name, bad, out)
				}
			}
			for _, want := range []string{"PATH=", "ALLOWED_VAR=let-through", "SET_VAR=set", "AMPFLOW_COMMIT=" + head, "leak: " + child.ScrubMask} {
				if !strings.Contains(out, want) {
					t.Errorf("%s lacks %q:\n%s", name, want, out)
				}
			}
		}
	})
	t.Run("UnknownCommit", func(t *testing.T) {
		_, err := newCI("true", time.Minute).Status(context.Background(), CIStatusInput{TaskID: "T-2026-005", Repo: repo, Commit: "deadbeef"})
		appErr(t, err, ErrCommitMissing, true)
	})
}

// The CI activity keeps each reading as its round's; the last pending
// reading ends the round as timed out.
func TestCIStatusKeepsRounds(t *testing.T) {
	ctx := context.Background()
	rec := newSSOT(t)
	pending := &fixedCI{res: CIStatusResult{State: CIPending}}
	a := &Activities{CI: pending, CIRounds: rec.Store}
	in := CIStatusInput{TaskID: "T-2026-001", Commit: "abc", Round: 1, Subtask: "S1"}
	if _, err := a.CIStatus(ctx, in); err != nil {
		t.Fatal(err)
	}
	in.Last = true
	if _, err := a.CIStatus(ctx, in); err != nil {
		t.Fatal(err)
	}
	a.CI = &fixedCI{res: CIStatusResult{State: CIFailed, Failing: []string{"lint"}, Detail: "lint: x.go:1", LogURL: "https://ci.example/1"}}
	if _, err := a.CIStatus(ctx, CIStatusInput{TaskID: "T-2026-001", Commit: "def", Round: 2, Subtask: "S1"}); err != nil {
		t.Fatal(err)
	}
	// Round 0 (a reading outside any round) keeps nothing.
	if _, err := a.CIStatus(ctx, CIStatusInput{TaskID: "T-2026-001", Commit: "ghi"}); err != nil {
		t.Fatal(err)
	}
	rs, err := ssot.CIRounds(ctx, rec.Store, "T-2026-001")
	if err != nil || len(rs) != 2 {
		t.Fatalf("rounds %+v, %v; want 2", rs, err)
	}
	if rs[0].State != ssot.CIRoundTimedOut || rs[0].Reads != 2 || rs[0].FinishedAt.IsZero() {
		t.Errorf("round 1 = %+v; want timed out after 2 reads", rs[0])
	}
	if r := rs[1]; r.State != ssot.CIRoundFailed || r.Log != "lint: x.go:1" || r.LogURL != "https://ci.example/1" || r.Commit != "def" {
		t.Errorf("round 2 = %+v; want failed with its log and URL", r)
	}
	// No provider: a reading is none, kept as such.
	a = &Activities{CIRounds: rec.Store}
	if res, err := a.CIStatus(ctx, CIStatusInput{TaskID: "T-2026-002", Commit: "abc", Round: 1}); err != nil || res.State != CINone {
		t.Fatalf("no provider: %+v, %v", res, err)
	}
	if rs, _ := ssot.CIRounds(ctx, rec.Store, "T-2026-002"); len(rs) != 1 || rs[0].State != ssot.CIRoundNone {
		t.Errorf("no provider: rounds %+v; want one none", rs)
	}
}

type fixedCI struct{ res CIStatusResult }

func (f *fixedCI) Status(context.Context, CIStatusInput) (CIStatusResult, error) { return f.res, nil }
