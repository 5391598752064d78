package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/github/githubtest"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/githubhook"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/statushook"
)

// commandExecutor is a command-mode executor: it ACKs its dispatch, writes
// hello-<task id>.txt on the task's branch, commits it and reports the
// commit; in the repository's directory, or its mirror for one given by
// URL.
const commandExecutor = `import json, subprocess, sys, time
m = json.load(sys.stdin)
p, tid = m["payload"], m["task_id"]
def stamp(): return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
def emit(r): print(json.dumps(r), flush=True)
def git(*a): return subprocess.run(["git", "-c", "user.name=agent", "-c", "user.email=agent@localhost", *a], check=True, capture_output=True, text=True).stdout.strip()
emit({"msg_id": "ack-%s-%d" % (tid, time.time() * 1000), "protocol_version": "AMP/1.0", "ack_of": m["msg_id"], "task_id": tid, "from": "executor", "timestamp": stamp()})
git("switch", "-q", p["branch"])
name = "hello-%s.txt" % tid
open(name, "w").write("hello\n")
git("add", name)
git("commit", "-qm", p["subtasks"][0]["description"])
stat = [l.split("\t") for l in git("diff", "--numstat", "main...HEAD").splitlines()]
time.sleep(0.002)
emit({"msg_id": "task_result-%s-%d" % (tid, time.time() * 1000), "protocol_version": "AMP/1.0", "type": "task_result", "from": "executor", "to": "coordinator",
      "task_id": tid, "timestamp": stamp(), "requires_ack": True, "ack_timeout_sec": 120,
      "payload": {"subtask_id": p["subtasks"][0]["subtask_id"], "completion_status": "complete", "commit_hash": git("rev-parse", "HEAD"), "work_log": [],
                  "diff_summary": {"files_changed": [s[2] for s in stat], "lines_added": sum(int(s[0]) for s in stat), "lines_removed": sum(int(s[1]) for s in stat)},
                  "self_assessment": {"criteria_met": [True] * len(p["acceptance_criteria"]), "notes": []}}})
`

// intakeDev is one ampflow dev for the intake tests: a command-mode
// executor, the reviewer played by the test over the API, delivery to a
// fake GitHub (push over HTTP, draft pull request, squash merge) whose
// issues of acme/widget are taken by the intake, every second and from
// the webhook.
type intakeDev struct {
	p          *devProc
	api        *apiClient
	a          *agent
	gh         *githubtest.Server
	bare, repo string
	hookSecret string
	// status receives notify.webhooks' deliveries whose signature holds.
	status *statusReceiver
}

// statusReceiver is a team's endpoint for ampflow's signed notices.
type statusReceiver struct {
	secret string
	mu     sync.Mutex
	got    []statushook.Delivery
	forged int
}

func (s *statusReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Header.Get(amp.HeaderSignature) != amp.WebhookSignature(s.secret, r.Header.Get(amp.HeaderTimestamp), body) {
		s.forged++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var d statushook.Delivery
	_ = json.Unmarshal(body, &d)
	s.got = append(s.got, d)
}

// of returns the deliveries of a task, and how many came unsigned.
func (s *statusReceiver) of(taskID string) (out []statushook.Delivery, forged int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.got {
		if d.TaskID == taskID {
			out = append(out, d)
		}
	}
	return out, s.forged
}

func startIntakeDev(t *testing.T) *intakeDev {
	t.Helper()
	const token = "ghs_e2eIntakeToken0123456789"
	d := &intakeDev{hookSecret: "e2e-intake-hook-secret"}
	d.bare, d.repo = githubtest.Origin(t)
	gitURL := githubtest.GitHTTP(t, filepath.Dir(d.bare), token)
	git(t, d.repo, "remote", "set-url", "origin", gitURL+"/"+filepath.Base(d.bare))
	d.gh = githubtest.New(t, githubtest.Options{Token: token, Origin: d.bare})
	script := filepath.Join(t.TempDir(), "executor.py")
	writeFile(t, script, commandExecutor)
	repos, _ := json.Marshal([]map[string]string{{"name": "acme/widget", "repo": d.repo}})
	d.status = &statusReceiver{secret: "e2e-status-secret"}
	receiver := httptest.NewServer(d.status)
	t.Cleanup(receiver.Close)
	hooks, _ := json.Marshal([]map[string]string{{"url": receiver.URL, "secret_env": "E2E_STATUS_SECRET"}})
	d.p = startDev(t, t.TempDir(),
		"AMPFLOW_AGENTS_EXECUTOR_MODE=command", "AMPFLOW_AGENTS_EXECUTOR_COMMAND=python3,"+script,
		"AMPFLOW_CI_GITHUB_API_URL="+d.gh.URL, "AMPFLOW_CI_GITHUB_REPO=acme/widget",
		"AMPFLOW_DELIVERY_PUSH=true", "AMPFLOW_DELIVERY_PULL_REQUEST=draft", "AMPFLOW_DELIVERY_MERGE=squash",
		"AMPFLOW_DELIVERY_GITHUB_TOKEN_ENV=E2E_GITHUB_TOKEN", "E2E_GITHUB_TOKEN="+token,
		"AMPFLOW_DELIVERY_GITHUB_POLL=1s", "AMPFLOW_DASHBOARD_ENABLED=true",
		"AMPFLOW_INTAKE_GITHUB_API_URL="+d.gh.URL, "AMPFLOW_INTAKE_GITHUB_TOKEN_ENV=E2E_GITHUB_TOKEN",
		"AMPFLOW_INTAKE_GITHUB_POLL_INTERVAL=1s", "AMPFLOW_INTAKE_GITHUB_WEBHOOK_SECRET_ENV=E2E_HOOK_SECRET",
		"E2E_HOOK_SECRET="+d.hookSecret, "AMPFLOW_INTAKE_GITHUB_REPOS="+string(repos),
		"AMPFLOW_NOTIFY_STATUS_UPDATES=true", "AMPFLOW_NOTIFY_WEBHOOKS="+string(hooks), "E2E_STATUS_SECRET="+d.status.secret)
	d.api = newAPIClient(t, d.p.api, "")
	d.a = &agent{t: t, tasks: dial(t, d.p)}
	return d
}

// hook delivers an issues event to the webhook signed with secret and
// returns the status.
func (d *intakeDev) hook(t *testing.T, secret string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+d.p.api+githubhook.Path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", "e2e-delivery")
	req.Header.Set("X-Hub-Signature-256", githubhook.Sign([]byte(secret), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// review approves the task's review request.
func (d *intakeDev) review(t *testing.T, id string) {
	t.Helper()
	a := *d.a
	a.t = t
	req := a.next(amp.RoleReviewer, id, amp.TypeReviewRequest)
	a.ack(req)
	a.send(a.verdict(req, amp.DecisionApproved))
}

// TestIntake: work arrives in one line or from a tracker and becomes one
// task each, on one dev server.
func TestIntake(t *testing.T) {
	d := startIntakeDev(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dev output:\n%s", d.p.output())
		}
	})

	// `task start "…"` with no file: the plan, its branch made, and the
	// command agent's work reviewed to done.
	t.Run("OneLineToDone", func(t *testing.T) {
		repo := d.repo
		out, errOut, code := cli(t, d.p, nil, "task", "start", "Add a hello file", "--repo", repo, "--criteria", "hello.txt says hello")
		if code != 0 {
			t.Fatalf("task start exited %d: %s%s", code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		id := lines[len(lines)-1]
		if !task.ValidID(id) {
			t.Fatalf("task start printed %q", out)
		}
		d.review(t, id)
		st := d.api.on(t).waitFor(id, "done", 2*time.Minute, func(st task.State) bool { return st.Status.Terminal() })
		if st.Status != task.StatusDone {
			t.Fatalf("task %s ended %s (%s)", id, st.Status, st.Reason)
		}
		if st.Branch != "ampflow/add-a-hello-file" || len(st.Subtasks) != 1 || st.Description != "Add a hello file" {
			t.Errorf("state %+v, want the one-line plan", st)
		}
		if got := githubtest.Git(t, d.bare, "log", "-1", "--format=%s", "main"); !strings.HasPrefix(got, "Add a hello file") {
			t.Errorf("origin's main is at %q, want the task's pull request merged", got)
		}
		// notify.webhooks: the team's endpoint followed the task to done,
		// every delivery signed.
		eventually(t, 30*time.Second, "the status webhook's done", func() (bool, error) {
			ds, forged := d.status.of(id)
			if forged > 0 {
				t.Fatalf("%d status deliveries were not signed with the secret", forged)
			}
			return len(ds) > 1 && ds[len(ds)-1].Event == notify.Status && ds[len(ds)-1].Status == task.StatusDone, nil
		})
	})

	// The same external_id, started twice at once and once more later,
	// from two callers, is one task.
	t.Run("ExternalIDOnce", func(t *testing.T) {
		api := d.api.on(t)
		repo := gitRepo(t)
		plan, _ := json.Marshal(lowRiskPlan(repo))
		req := httpapi.StartRequest{Plan: plan, Source: "jira", ExternalID: "PROJ-7", ExternalURL: "https://jira.example/browse/PROJ-7"}
		body, _ := json.Marshal(req)
		ids := make([]string, 3)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, resp, err := api.raw("POST", "/v1/tasks", body)
				var r httpapi.StartResponse
				if err != nil || code != http.StatusCreated || json.Unmarshal(resp, &r) != nil {
					t.Errorf("start %d: %d %s %v", i, code, resp, err)
				}
				ids[i] = r.TaskID
			}()
		}
		wg.Wait()
		var again httpapi.StartResponse
		if code := api.with("Idempotency-Key", "other-caller").do("POST", "/v1/tasks", req, &again); code != http.StatusCreated || !again.Existing {
			t.Errorf("a third start answered %d %+v, want the existing task", code, again)
		}
		ids[2] = again.TaskID
		if ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] {
			t.Fatalf("the starts answered tasks %v, want one task", ids)
		}
		st := api.state(ids[0])
		if st.Origin == nil || st.Origin.ExternalID != "PROJ-7" || st.Origin.URL != req.ExternalURL {
			t.Errorf("the task's origin is %+v", st.Origin)
		}
		var list httpapi.ListResponse
		api.do("GET", "/v1/tasks?source=jira", nil, &list)
		if len(list.Tasks) != 1 || list.Tasks[0].TaskID != ids[0] || list.Tasks[0].Origin == nil {
			t.Errorf("tasks from jira: %+v, want %s alone", list.Tasks, ids[0])
		}
		out, _, code := cli(t, d.p, nil, "task", "list", "--source", "jira")
		if code != 0 || !strings.Contains(out, ids[0]) || !strings.Contains(out, "jira PROJ-7") || strings.Count(out, "T-") != 1 {
			t.Errorf("task list --source jira exited %d:\n%s", code, out)
		}
		if code, resp := api.call("POST", "/v1/tasks", httpapi.StartRequest{Plan: plan, Source: "Bad Source", ExternalID: "x"}, nil); code != http.StatusBadRequest || !strings.Contains(string(resp), "source") {
			t.Errorf("a bad source answered %d %s", code, resp)
		}
		// Its repository has no origin to deliver to: it was refused, or is
		// cancelled here so that it runs no agent beside the next subtests.
		_, _, _ = api.raw("POST", "/v1/tasks/"+ids[0]+"/cancel", mustJSON(t, httpapi.CancelRequest{Reason: "the test is over"}))
	})

	// A labelled issue is one task, though its label arrives from the poll
	// and twice from the webhook at once; its progress is commented in
	// order, and the issue closes when the pull request merges.
	t.Run("GitHubIssue", func(t *testing.T) {
		api := d.api.on(t)
		is := d.gh.AddIssue("acme", "widget", "Add a greeting", "Say hello.\n\n- [ ] hello.txt says hello\n", []string{"risk:medium"}, nil)
		event := d.gh.LabelIssue("acme", "widget", is.Number, "ampflow")
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if code := d.hook(t, d.hookSecret, event); code != http.StatusAccepted {
					t.Errorf("the webhook answered %d", code)
				}
			}()
		}
		wg.Wait()
		var id string
		eventually(t, 30*time.Second, "the issue's task", func() (bool, error) {
			var list httpapi.ListResponse
			api.do("GET", "/v1/tasks?source=github", nil, &list)
			if len(list.Tasks) > 1 {
				t.Fatalf("the issue started %d tasks: %+v", len(list.Tasks), list.Tasks)
			}
			if len(list.Tasks) == 1 {
				id = list.Tasks[0].TaskID
			}
			return id != "", nil
		})
		st := api.state(id)
		if st.Origin == nil || st.Origin.ExternalID != "acme/widget#100" || st.Origin.URL != is.HTMLURL ||
			st.Branch != "ampflow/issue-100-add-a-greeting" || st.Risk != amp.RiskMedium || !strings.Contains(st.Description, "Say hello.") {
			t.Errorf("the issue's task: %+v", st)
		}
		// The dashboard's task page links back to the issue.
		if code, page, err := api.raw("GET", "/tasks/"+id, nil); err != nil || code != http.StatusOK || !strings.Contains(string(page), `href="`+is.HTMLURL+`"`) {
			t.Errorf("the task's page (%d, %v) does not link to %s", code, err, is.HTMLURL)
		}
		pending := api.pending(id, task.KindPlanApproval, 60*time.Second)
		eventually(t, 30*time.Second, "the admin's comment", func() (bool, error) {
			cs := d.gh.IssueComments("acme", "widget", is.Number)
			return len(cs) == 2 && strings.Contains(cs[1].Body, "waits for an admin"), nil
		})
		api.decide(pending, "approve")
		d.review(t, id)
		st = api.waitFor(id, "done", 2*time.Minute, func(st task.State) bool { return st.Status.Terminal() })
		if st.Status != task.StatusDone {
			t.Fatalf("task %s ended %s (%s)", id, st.Status, st.Reason)
		}
		var comments []githubtest.IssueComment
		eventually(t, 30*time.Second, "the issue closed", func() (bool, error) {
			is, _ := d.gh.Issue("acme", "widget", is.Number)
			comments = d.gh.IssueComments("acme", "widget", is.Number)
			return is.State == "closed" && len(comments) >= 5, nil
		})
		var got []string
		for _, c := range comments {
			got = append(got, c.Body)
		}
		want := []string{"ampflow started task [" + id + "]", "waits for an admin: Approve the plan", "opened a pull request: " + st.PullRequest, "merged as", "is done"}
		if len(got) != len(want) {
			t.Fatalf("comments:\n%s\nwant %d", strings.Join(got, "\n---\n"), len(want))
		}
		for i, w := range want {
			if !strings.Contains(got[i], w) {
				t.Errorf("comment %d is %q, want it to say %q", i, got[i], w)
			}
		}
		if !strings.Contains(got[1], "/tasks/"+id) {
			t.Errorf("the admin's comment has no dashboard link: %q", got[1])
		}
		// Later polls and a late delivery change nothing.
		if code := d.hook(t, d.hookSecret, event); code != http.StatusAccepted {
			t.Errorf("the webhook answered %d", code)
		}
		var list httpapi.ListResponse
		api.do("GET", "/v1/tasks?source=github", nil, &list)
		if len(list.Tasks) != 1 {
			t.Errorf("tasks from github: %+v", list.Tasks)
		}
		out, _, code := cli(t, d.p, nil, "task", "list", "--source", "github")
		if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "github acme/widget#100") {
			t.Errorf("task list --source github exited %d:\n%s", code, out)
		}
	})

	// A repository given by URL: the worker makes its mirror, the agent
	// works there, and ampflow pushes the task branch back to the URL.
	t.Run("OneLineURLToDone", func(t *testing.T) {
		url := "file://" + d.bare
		out, errOut, code := cli(t, d.p, nil, "task", "start", "Add a file from the URL", "--repo", url)
		if code != 0 {
			t.Fatalf("task start exited %d: %s%s", code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		id := lines[len(lines)-1]
		d.review(t, id)
		st := d.api.on(t).waitFor(id, "done", 2*time.Minute, func(st task.State) bool { return st.Status.Terminal() })
		if st.Status != task.StatusDone || st.Repo != url {
			t.Fatalf("task %s on %s ended %s (%s), want done on %s", id, st.Repo, st.Status, st.Reason, url)
		}
		pushed := githubtest.Git(t, d.bare, "log", "-1", "--format=%s", "refs/heads/ampflow/add-a-file-from-the-url")
		if pushed != "Add a file from the URL" {
			t.Errorf("the URL's task branch is at %q, want the agent's commit pushed", pushed)
		}
		if got := githubtest.Git(t, d.bare, "show", "main:hello-"+id+".txt"); got != "hello" {
			t.Errorf("main has %q of the task's file, want its pull request merged", got)
		}
	})

	t.Run("ForgedWebhook", func(t *testing.T) {
		is := d.gh.AddIssue("acme", "widget", "Forged", "", []string{"bug"}, nil)
		body, _ := json.Marshal(map[string]any{"action": "labeled", "issue": map[string]any{"number": is.Number, "labels": []any{map[string]string{"name": "ampflow"}}},
			"repository": map[string]string{"full_name": "acme/widget"}})
		if code := d.hook(t, "not-the-secret", body); code != http.StatusUnauthorized {
			t.Errorf("a forged delivery answered %d, want 401", code)
		}
		// Even signed, the delivery is only "look now": GitHub says the
		// issue has no label, so it starts nothing.
		if code := d.hook(t, d.hookSecret, body); code != http.StatusAccepted {
			t.Errorf("a signed delivery answered %d", code)
		}
		var list httpapi.ListResponse
		d.api.on(t).do("GET", "/v1/tasks?source=github", nil, &list)
		for _, tk := range list.Tasks {
			if tk.Origin != nil && tk.Origin.ExternalID == fmt.Sprintf("acme/widget#%d", is.Number) {
				t.Errorf("the forged issue started %s", tk.TaskID)
			}
		}
	})
}
