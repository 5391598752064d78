package e2e

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/goals"
)

// greenChecks is a hook of gh that gives every commit GitHub is asked
// the check runs of a passing one, as a CI that runs on every push
// would; asked lists the commits asked about.
func greenChecks(gh *githubtest.Server) (hook func(http.ResponseWriter, *http.Request) bool, asked func() []string) {
	var mu sync.Mutex
	var commits []string
	hook = func(_ http.ResponseWriter, r *http.Request) bool {
		parts := strings.Split(r.URL.Path, "/") // /api/v3/repos/OWNER/REPO/commits/SHA/check-runs
		if len(parts) != 9 || parts[6] != "commits" || parts[8] != "check-runs" {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(commits, parts[7]) {
			commits = append(commits, parts[7])
			gh.AddCheckRun(parts[4], parts[5], parts[7], "test", "success", githubtest.CheckOutput{Title: "ok"}, nil, nil, "")
		}
		return false
	}
	return hook, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(commits)
	}
}

// githubQueueSetup is a repository whose origin is served over HTTP
// behind a token, a fake GitHub reading the same bare repository with
// every commit's checks green, and an ampflow dev whose tasks push,
// open ready pull requests, and read GitHub's CI.
type githubQueueSetup struct {
	bare, repo string
	gh         *githubtest.Server
	p          *devProc
	c          *apiClient
	// checks is the fake's hook that makes every commit's checks green;
	// asked lists the commits CI was asked about.
	checks func(http.ResponseWriter, *http.Request) bool
	asked  func() []string
}

func newGitHubQueueSetup(t *testing.T, token string) *githubQueueSetup {
	t.Helper()
	q := &githubQueueSetup{}
	q.bare, q.repo = githubtest.Origin(t)
	gitURL := githubtest.GitHTTP(t, filepath.Dir(q.bare), token)
	git(t, q.repo, "remote", "set-url", "origin", gitURL+"/"+filepath.Base(q.bare))
	q.gh = githubtest.New(t, githubtest.Options{Token: token, Origin: q.bare})
	q.checks, q.asked = greenChecks(q.gh)
	q.gh.SetHook(q.checks)
	q.p = startDev(t, t.TempDir(),
		"AMPFLOW_CI_PROVIDER=github", "AMPFLOW_CI_GITHUB_TOKEN="+token, "AMPFLOW_CI_POLL_INTERVAL=1s",
		"AMPFLOW_CI_GITHUB_API_URL="+q.gh.URL, "AMPFLOW_CI_GITHUB_REPO=acme/widget",
		"AMPFLOW_DELIVERY_PUSH=true", "AMPFLOW_DELIVERY_PULL_REQUEST=ready",
		"AMPFLOW_DELIVERY_GITHUB_TOKEN_ENV=E2E_GITHUB_TOKEN", "E2E_GITHUB_TOKEN="+token, "AMPFLOW_DELIVERY_GITHUB_POLL=1s")
	q.c = newAPIClient(t, q.p.api, "")
	return q
}

// TestGoalGitHubQueue runs a goal of two parallel tasks on a repository
// whose origin is on a fake GitHub: each task pushes its branch and
// opens a pull request, and main's merge queue merges them one at a
// time through GitHub's API. The second is rebased onto main after the
// first merged there, pushed again, CI'd, and merged; the origin's main
// holds both, the local main is not moved.
func TestGoalGitHubQueue(t *testing.T) {
	q := newGitHubQueueSetup(t, "ghs_e2eQueueToken0123456789")
	bare, repo, gh, c := q.bare, q.repo, q.gh, q.c
	localMain := git(t, repo, "rev-parse", "main")

	g := startGoal(t, c, repo,
		map[string]any{"key": "a", "plan": goalPlan("a")},
		map[string]any{"key": "b", "plan": goalPlan("b")})
	v := goalDone(t, g, 150*time.Second)

	// The origin's main is the two merges, one after the other.
	line := strings.Fields(githubtest.Git(t, bare, "log", "--first-parent", "--format=%H", "main"))
	if len(line) != 3 {
		t.Fatalf("the origin's main is %v, want two merges on the first commit", line)
	}
	first, second := line[1], line[0]
	pulls := gh.Pulls()
	if len(pulls) != 2 || !pulls[0].Merged || !pulls[1].Merged {
		t.Fatalf("pull requests %+v, want two merged", pulls)
	}
	byMerge := map[string]githubtest.Pull{}
	for _, pr := range pulls {
		byMerge[pr.MergeCommitSHA] = pr
	}
	pr1, ok1 := byMerge[first]
	pr2, ok2 := byMerge[second]
	if !ok1 || !ok2 {
		t.Fatalf("main's merges %s, %s are not the pull requests' %+v", first, second, pulls)
	}
	// The second was rebased onto the first's merge, pushed, and CI ran
	// on that push before it merged.
	if parent := githubtest.Git(t, bare, "rev-parse", pr2.Head.SHA+"^"); parent != first {
		t.Errorf("the second pull request's head %s sits on %s, want the first's merge %s", pr2.Head.SHA, parent, first)
	}
	if !slices.Contains(q.asked(), pr2.Head.SHA) {
		t.Errorf("CI was asked about %v, not the second's rebased head %s", q.asked(), pr2.Head.SHA)
	}
	if parent := githubtest.Git(t, bare, "rev-parse", pr1.Head.SHA+"^"); parent != line[2] {
		t.Errorf("the first pull request's head sits on %s, want the first commit %s", parent, line[2])
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		githubtest.Git(t, bare, "cat-file", "-e", "main:"+f)
	}
	if got := git(t, repo, "rev-parse", "main"); got != localMain {
		t.Errorf("the local main moved to %s", got)
	}
	// Each task's merge is its pull request's, and the second's timeline
	// says it was rebased.
	for _, tv := range v.Tasks {
		st := c.state(tv.TaskID)
		pr, ok := byMerge[st.MergeCommit]
		if !ok || tv.Merged != st.MergeCommit || st.PullRequest != pr.HTMLURL {
			t.Errorf("task %s: merge %s, goal's %s, pull request %s", tv.Key, st.MergeCommit, tv.Merged, st.PullRequest)
		}
		rebased := slices.ContainsFunc(st.Timeline, func(e task.TimelineEntry) bool {
			return e.Kind == "queue" && strings.Contains(e.Note, "rebased onto main")
		})
		if want := st.MergeCommit == second; rebased != want {
			t.Errorf("task %s (merged %s): rebased in its timeline %v, want %v", tv.Key, st.MergeCommit, rebased, want)
		}
	}
}

// TestGoalGitHubQueueBlocked: b is blocked by a on a clone whose origin
// is on the fake GitHub. a's pull request merges into the origin's main,
// which the clone's main never sees; b's branch is made at the origin's
// main then, so it starts with a's file, its base is a's merge, and the
// queue has nothing to rebase.
func TestGoalGitHubQueueBlocked(t *testing.T) {
	q := newGitHubQueueSetup(t, "ghs_e2eQueueBlockedToken0123456789")
	localMain := git(t, q.repo, "rev-parse", "main")
	g := startGoal(t, q.c, q.repo,
		map[string]any{"key": "a", "plan": goalPlan("a")},
		map[string]any{"key": "b", "plan": goalPlan("b"), "blocked_by": []string{"a"}})
	v := goalDone(t, g, 150*time.Second)
	byKey := map[string]goals.TaskView{}
	for _, tv := range v.Tasks {
		byKey[tv.Key] = tv
	}
	a, b := byKey["a"], byKey["b"]
	if a.Base != localMain || b.Base != a.Merged {
		t.Errorf("bases: a %s, b %s; want a on main %s, b on a's merge %s", a.Base, b.Base, localMain, a.Merged)
	}
	// What b's executor was dispatched on holds a's file: its commit sits
	// on a's merge, and it went through the queue as it was pushed.
	st := q.c.state(b.TaskID)
	var head string
	for _, pr := range q.gh.Pulls() {
		if pr.MergeCommitSHA == b.Merged {
			head = pr.Head.SHA
		}
	}
	if head == "" {
		t.Fatalf("no pull request merged as b's %s: %+v", b.Merged, q.gh.Pulls())
	}
	if parent := githubtest.Git(t, q.bare, "rev-parse", head+"^"); parent != a.Merged {
		t.Errorf("b's head %s sits on %s, want a's merge %s", head, parent, a.Merged)
	}
	githubtest.Git(t, q.bare, "cat-file", "-e", head+"^:a.txt")
	for _, e := range st.Timeline {
		if e.Kind == "queue" && strings.Contains(e.Note, "rebased onto") {
			t.Errorf("b was rebased in the queue: %s", e.Note)
		}
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		githubtest.Git(t, q.bare, "cat-file", "-e", "main:"+f)
	}
	if got := git(t, q.repo, "rev-parse", "main"); got != localMain {
		t.Errorf("the local main moved to %s", got)
	}
}

// TestGoalGitHubQueueKilledInMerge kills the worker while GitHub merges
// the queue's pull request: after the restart the retry finds it merged
// and takes its merge commit; GitHub was asked to merge once.
func TestGoalGitHubQueueKilledInMerge(t *testing.T) {
	q := newGitHubQueueSetup(t, "ghs_e2eQueueKillToken0123456789")
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	merges := 0
	q.gh.SetHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/merge") {
			mu.Lock()
			merges++
			mu.Unlock()
			once.Do(func() {
				close(arrived)
				<-release
			})
		}
		return q.checks(w, r)
	})
	g := startGoal(t, q.c, q.repo, map[string]any{"key": "solo", "plan": goalPlan("solo")})
	g.until("the merge asked of GitHub", 90*time.Second, func(goals.View) bool {
		select {
		case <-arrived:
			return true
		default:
			return false
		}
	})
	q.p.kill()
	close(release) // GitHub goes on merging it
	eventually(t, 10*time.Second, "the pull request merged", func() (bool, error) {
		pulls := q.gh.Pulls()
		return len(pulls) == 1 && pulls[0].Merged, nil
	})
	q.p.restart()
	v := goalDone(t, g, 3*time.Minute)
	pr := q.gh.Pulls()[0]
	main := githubtest.Git(t, q.bare, "rev-parse", "refs/heads/main")
	if v.Tasks[0].Merged != pr.MergeCommitSHA || main != pr.MergeCommitSHA {
		t.Errorf("the goal's merge %s, the pull request's %s, origin's main %s", v.Tasks[0].Merged, pr.MergeCommitSHA, main)
	}
	mu.Lock()
	defer mu.Unlock()
	if merges != 1 {
		t.Errorf("GitHub was asked to merge %d times, want once", merges)
	}
}

// TestGoalGitHubQueueConflict: two parallel tasks on the fake GitHub
// write the same file; the second to reach the queue no longer rebases
// onto main there and goes back to its executor, which rebases onto
// origin/main; both pull requests end merged, main keeping both lines.
func TestGoalGitHubQueueConflict(t *testing.T) {
	q := newGitHubQueueSetup(t, "ghs_e2eQueueConflictToken0123456789")
	g := startGoal(t, q.c, q.repo,
		map[string]any{"key": "left", "plan": goalPlan("left")},
		map[string]any{"key": "right", "plan": goalPlan("right")})
	g.file = func(string) string { return "shared.txt" }
	g.origin = q.bare
	v := goalDone(t, g, 150*time.Second)
	rounds := 0
	for _, tv := range v.Tasks {
		rounds += tv.QueueRounds
	}
	if rounds != 1 || g.rounds["left"]+g.rounds["right"] != 1 {
		t.Errorf("queue rounds %d, rebase dispatches %v: want one for the second in the queue", rounds, g.rounds)
	}
	shared := githubtest.Git(t, q.bare, "show", "main:shared.txt")
	if !strings.Contains(shared, "left") || !strings.Contains(shared, "right") {
		t.Errorf("the origin's main has shared.txt %q, want both tasks' lines", shared)
	}
	if pulls := q.gh.Pulls(); len(pulls) != 2 || !pulls[0].Merged || !pulls[1].Merged {
		t.Errorf("pull requests %+v, want both merged", pulls)
	}
}

// TestGoalGitHubMergeQueue: main has a merge_queue rule, so the tasks'
// pull requests go through GitHub's own merge queue: each is enqueued
// (no merge through the REST API), GitHub merges it, and the goal ends
// with both merged into the origin's main.
func TestGoalGitHubMergeQueue(t *testing.T) {
	q := newGitHubQueueSetup(t, "ghs_e2eGitHubMergeQueueToken0123456789")
	q.gh.SetRules("main", "pull_request", "merge_queue")
	stop := make(chan struct{})
	defer close(stop)
	go func() { // GitHub's queue: merge groups whose checks pass merge
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
				q.gh.ProcessMergeQueue()
			}
		}
	}()
	g := startGoal(t, q.c, q.repo,
		map[string]any{"key": "a", "plan": goalPlan("a")},
		map[string]any{"key": "b", "plan": goalPlan("b")})
	v := goalDone(t, g, 150*time.Second)
	pulls := q.gh.Pulls()
	if len(pulls) != 2 || !pulls[0].Merged || !pulls[1].Merged {
		t.Fatalf("pull requests %+v, want both merged", pulls)
	}
	enqueued := 0
	for _, r := range q.gh.Requests() {
		if r.Method == http.MethodPut && strings.HasSuffix(r.Path, "/merge") {
			t.Errorf("a merge through the REST API: %s", r.Path)
		}
		if strings.Contains(r.Body, "enqueuePullRequest") {
			enqueued++
		}
	}
	if enqueued != 2 {
		t.Errorf("%d enqueuePullRequest requests, want one per pull request", enqueued)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		githubtest.Git(t, q.bare, "cat-file", "-e", "main:"+f)
	}
	for _, tv := range v.Tasks {
		if st := q.c.state(tv.TaskID); st.MergeCommit != tv.Merged || !slices.ContainsFunc(pulls, func(p githubtest.Pull) bool { return p.MergeCommitSHA == tv.Merged }) {
			t.Errorf("task %s merged %s, not a pull request's merge", tv.Key, tv.Merged)
		}
	}
}
