package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// commandExecutor is a command-mode executor: it ACKs its dispatch, writes
// hello.txt on the task's branch, commits it and reports the commit.
const commandExecutor = `import json, subprocess, sys, time
m = json.load(sys.stdin)
p, tid = m["payload"], m["task_id"]
def stamp(): return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
def emit(r): print(json.dumps(r), flush=True)
def git(*a): return subprocess.run(["git", "-c", "user.name=agent", "-c", "user.email=agent@localhost", *a], check=True, capture_output=True, text=True).stdout.strip()
emit({"msg_id": "ack-%s-%d" % (tid, time.time() * 1000), "protocol_version": "AMP/1.0", "ack_of": m["msg_id"], "task_id": tid, "from": "executor", "timestamp": stamp()})
git("switch", "-q", p["branch"])
open("hello.txt", "w").write("hello\n")
git("add", "hello.txt")
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
// executor, and the reviewer played by the test over the API.
type intakeDev struct {
	p   *devProc
	api *apiClient
	a   *agent
}

func startIntakeDev(t *testing.T, env ...string) *intakeDev {
	t.Helper()
	script := filepath.Join(t.TempDir(), "executor.py")
	writeFile(t, script, commandExecutor)
	p := startDev(t, t.TempDir(), append([]string{
		"AMPFLOW_AGENTS_EXECUTOR_MODE=command", "AMPFLOW_AGENTS_EXECUTOR_COMMAND=python3," + script}, env...)...)
	return &intakeDev{p: p, api: newAPIClient(t, p.api, ""), a: &agent{t: t, tasks: dial(t, p)}}
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

	// `task start "…"` with no file: the plan, its branch made, and the
	// command agent's work reviewed to done.
	t.Run("OneLineToDone", func(t *testing.T) {
		repo := gitRepo(t)
		git(t, repo, "checkout", "-q", "main")
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
		st := d.api.on(t).waitFor(id, "done", 90*time.Second, func(st task.State) bool { return st.Status.Terminal() })
		if st.Status != task.StatusDone {
			t.Fatalf("task %s ended %s (%s)", id, st.Status, st.Reason)
		}
		if st.Branch != "ampflow/add-a-hello-file" || len(st.Subtasks) != 1 || st.Description != "Add a hello file" {
			t.Errorf("state %+v, want the one-line plan", st)
		}
		if got := git(t, repo, "log", "-1", "--format=%s", "ampflow/add-a-hello-file"); got != "Add a hello file" {
			t.Errorf("the branch's last commit is %q, want the agent's", got)
		}
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
	})
}
