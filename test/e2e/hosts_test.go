package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/runner/fakemodel"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/fleet"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// hostTimeout is the runner hosts' runner.host_timeout in TestRunnerHosts.
const hostTimeout = 10 * time.Second

// TestRunnerHosts runs Temporal on PostgreSQL and two `ampflow worker`
// processes as two runner hosts (their own data_dir and HOMEs, one SSOT),
// the real Codex and Claude Code against fake models, on a repository
// given by URL (a local bare repository). The reviewer rejects the first
// result: the second round's run lands on the same host and resumes its
// session. That host is killed with SIGKILL during the second review:
// the task re-homes to the other host, whose reviewer starts afresh with
// the transcript so far, the timeline says so, and the task ends done.
func TestRunnerHosts(t *testing.T) {
	// Much of its time is the wait for the killed host's timeout; it runs
	// beside the other tests that wait so.
	t.Parallel()
	admin := os.Getenv("AMPFLOW_TEST_POSTGRES")
	if admin == "" {
		t.Skip("AMPFLOW_TEST_POSTGRES is not set: the runner hosts test needs a PostgreSQL server it may create databases on")
	}
	approve := `Right now. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "it says hello"}]}`
	executor := fakemodel.New(
		codexCommit("helo", "add hello.txt"),
		fakemodel.Turn{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "first-round report"}`},
		codexCommit("hello", "fix the greeting"),
		fakemodel.Turn{Text: `Fixed. {"criteria_met": [true], "notes": [], "summary": "fixed the greeting"}`},
	)
	t.Cleanup(executor.Close)
	reviewer := fakemodel.New(
		fakemodel.Turn{Text: `Not yet. {"decision": "rejected", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": false, "evidence": "it says helo"}], ` +
			`"issues": [{"severity": "major", "file": "hello.txt", "line": 1, "description": "` + helloIssue + `", "suggested_fix": "write hello"}]}`},
		// The second review takes its time: its host dies meanwhile.
		fakemodel.Turn{Text: "Reading.", Tool: &fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": "sleep 120", "description": "wait"}}},
		// Only the re-homed run, told where it comes from, approves.
		fakemodel.Turn{For: "moved to a new machine", Text: approve},
	)
	t.Cleanup(reviewer.Close)

	dbs := newScaleDatabases(t, admin)
	c := &scaleCluster{t: t, dbs: dbs, began: time.Now()}
	frontend := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(frontend)
	key := "AMPFLOW_TEMPORAL_API_KEY=hosts-test-key"
	c.temporal = &clusterProc{t: t, name: "ampflow temporal", ready: "ready in",
		args: []string{"temporal", "--temporal-db", dbs.temporal, "--temporal-port", port, "--ui-port", "0"}, env: []string{key}}
	t.Cleanup(c.temporal.stop)
	c.temporal.start()
	hosts := []string{"host-0", "host-1"}
	for _, host := range hosts {
		w := &clusterProc{t: t, name: "worker " + host, ready: "worker ", api: fmt.Sprintf("127.0.0.1:%d", freePort(t)), args: []string{"worker"}}
		w.env = append([]string{key,
			"AMPFLOW_TEMPORAL_ADDRESS=" + frontend, "AMPFLOW_TEMPORAL_NAMESPACE=default", "AMPFLOW_TEMPORAL_TASK_QUEUE=ampflow-hosts",
			"AMPFLOW_HTTP_ADDR=" + w.api, "AMPFLOW_DATA_DIR=" + filepath.Join(t.TempDir(), "data"), "AMPFLOW_SSOT_URL=" + dbs.ssot,
			"AMPFLOW_ADMINS=" + httpapi.OpenName, "AMPFLOW_LOG_LEVEL=warn",
			"AMPFLOW_AUTH_DECISION_KEY=" + strings.Repeat(fmt.Sprint(7), 64),
			"AMPFLOW_RUNNER_HOST=" + host, "AMPFLOW_RUNNER_HOST_TIMEOUT=" + hostTimeout.String(),
		}, append(runnerEnv(t, amp.RoleExecutor, "codex", executor), runnerEnv(t, amp.RoleReviewer, "claude", reviewer)...)...)
		t.Cleanup(w.stop)
		w.start()
		c.workers = append(c.workers, w)
		c.apis = append(c.apis, newAPIClient(t, w.api, ""))
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range append([]*clusterProc{c.temporal}, c.workers...) {
				t.Logf("%s output:\n%s", p.name, tail(p.output(), 40))
			}
		}
	})
	work := gitRepo(t)
	git(t, work, "checkout", "-q", "main")
	bare := filepath.Join(t.TempDir(), "app.git")
	git(t, work, "clone", "-q", "--bare", work, bare)
	plan := lowRiskPlan("file://" + bare)
	const id = "T-2026-941"
	c.apis[0].startTask(id, plan)
	c.logf("task started")

	// The first review asks for a fix; the second round's run is on the
	// task's host and resumes its session.
	var home int
	var f fleet.Response
	eventually(t, 4*time.Minute, "the second review running", func() (bool, error) {
		c.apis[0].call("GET", "/v1/fleet", nil, &f)
		for _, h := range f.Hosts {
			for _, r := range h.Running {
				if r.TaskID == id && r.Role == amp.RoleReviewer && reviewer.Served() >= 2 {
					home = slices.Index(hosts, h.Host)
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("fleet %+v, reviewer served %d turns", f.Hosts, reviewer.Served())
	})
	other := 1 - home
	c.logf("second review running on %s", hosts[home])
	st := c.apis[other].state(id)
	if notes := hostNotes(st); len(notes) != 1 || notes[0] != "runs on host "+hosts[home] {
		t.Errorf("host timeline %q, want one note: runs on host %s", notes, hosts[home])
	}
	if reqs := executor.AgentRequests(); len(reqs) < 3 || !reqs[2].Text("first-round report") || !reqs[2].Text(helloIssue) {
		t.Errorf("the second round did not resume the first round's session on the same host (%d codex requests)", len(reqs))
	}
	if got := git(t, bare, "rev-parse", "--verify", "-q", plan.Branch); got == "" {
		t.Error("the executor's branch was not pushed back to the repository")
	}

	c.workers[home].kill()
	c.logf("%s killed (SIGKILL)", hosts[home])
	st = c.apis[other].waitFor(id, "done", 3*time.Minute, func(st task.State) bool {
		return st.Status == task.StatusDone || st.Underlying() == task.StatusAwaitingAdmin || st.Status == task.StatusTerminated
	})
	c.logf("task %s", st.Status)
	if st.Status != task.StatusDone {
		t.Fatalf("task %s: status %s (%s), want done", id, st.Status, st.LastError)
	}
	notes := hostNotes(st)
	want := fmt.Sprintf("re-homed from host %s to host %s: %s not seen since ", hosts[home], hosts[other], hosts[home])
	if len(notes) != 2 || !strings.HasPrefix(notes[1], want) {
		t.Errorf("host timeline %q, want the re-home note %q…", notes, want)
	}
	if got := git(t, bare, "show", plan.Branch+":hello.txt"); got != "hello" {
		t.Errorf("hello.txt on the repository's branch = %q, want hello", got)
	}
}

func hostNotes(st task.State) []string {
	var out []string
	for _, e := range st.Timeline {
		if e.Kind == "host" {
			out = append(out, e.Note)
		}
	}
	return out
}
