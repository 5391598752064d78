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
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// The fleet of TestRunnerHosts: the issue's 12 tasks on 3 hosts of 2
// slots, so each host also queues runs. On a 2-core machine it takes
// about 90 s, the 48 CLI runs and more most of it.
const (
	hostTimeout = 10 * time.Second // the hosts' runner.host_timeout
	fleetHosts  = 3
	fleetSlots  = 2 // each host's runner.slots
	fleetTasks  = 12
)

// The reviewer's verdicts in TestRunnerHosts.
const (
	fleetReject = `Not yet. {"decision": "rejected", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": false, "evidence": "it says helo"}], ` +
		`"issues": [{"severity": "major", "file": "hello.txt", "line": 1, "description": "` + helloIssue + `", "suggested_fix": "write hello"}]}`
	fleetApprove = `Right now. {"decision": "approved", "confidence": 0.9, "criteria_results": [{"criterion": "hello.txt says hello", "passed": true, "evidence": "it says hello"}]}`
)

// fleetTask is one task of TestRunnerHosts and where its turns are in
// the fake models' scripts.
type fleetTask struct {
	id, marker, branch string
	// gate holds the task's second review until it is closed.
	gate chan struct{}
	// round2 is the executor's turn of the second round's first request;
	// held is the reviewer's turn of the second review, rehomed that of a
	// review after the task moved.
	round2, held, rehomed int
	host                  string // where it first ran
}

// fleetScripts are the models' turns for tasks: each turn is For its
// task's marker, so the runs of six tasks at once each get their own.
func fleetScripts(tasks []*fleetTask) (executor, reviewer []fakemodel.Turn) {
	for _, ft := range tasks {
		own := func(t fakemodel.Turn) fakemodel.Turn { t.For = ft.marker; return t }
		executor = append(executor,
			own(codexCommit("helo", "add hello.txt")),
			own(fakemodel.Turn{Text: `Done. {"criteria_met": [true], "notes": [], "summary": "first-round report"}`}))
		ft.round2 = len(executor)
		executor = append(executor,
			own(codexCommit("hello", "fix the greeting")),
			own(fakemodel.Turn{Text: `Fixed. {"criteria_met": [true], "notes": [], "summary": "fixed the greeting"}`}))
		reviewer = append(reviewer, own(fakemodel.Turn{Text: fleetReject}))
		ft.held = len(reviewer)
		reviewer = append(reviewer, own(fakemodel.Turn{Text: fleetApprove, Hold: ft.gate}))
		ft.rehomed = len(reviewer)
		reviewer = append(reviewer, own(fakemodel.Turn{Text: fleetApprove}))
	}
	return executor, reviewer
}

// TestRunnerHosts runs Temporal on PostgreSQL and three `ampflow worker`
// processes as three runner hosts (their own data_dir and HOMEs, one
// SSOT, runner.slots 2 each), the real Codex and Claude Code against fake
// models, on a repository given by URL (a local bare repository). Twelve
// tasks go at once; the reviewer rejects each first result, and each
// second round resumes its session on its host. The host with the most
// tasks is killed with SIGKILL while its slots hold second reviews: its
// tasks re-home, their reviewers start afresh with the transcript so far,
// the timeline says so, and every task ends done. Throughout, /proc and
// the fleet view show no host running more than 2 CLIs and no task
// running on two hosts at once.
func TestRunnerHosts(t *testing.T) {
	// Much of its time is the wait for the killed host's timeout; it runs
	// beside the other tests that wait so.
	t.Parallel()
	admin := os.Getenv("AMPFLOW_TEST_POSTGRES")
	if admin == "" {
		t.Skip("AMPFLOW_TEST_POSTGRES is not set: the runner hosts test needs a PostgreSQL server it may create databases on")
	}
	var tasks []*fleetTask
	for i := range fleetTasks {
		tasks = append(tasks, &fleetTask{id: fmt.Sprintf("T-2026-%d", 951+i), marker: fmt.Sprintf("[fleet-task-%d]", i+1),
			branch: fmt.Sprintf("feature/fleet-%d", i+1), gate: make(chan struct{})})
	}
	execTurns, reviewTurns := fleetScripts(tasks)
	executor, reviewer := fakemodel.New(execTurns...), fakemodel.New(reviewTurns...)
	t.Cleanup(executor.Close)
	t.Cleanup(reviewer.Close)

	c, dataDirs := startRunnerHosts(t, admin, executor, reviewer)
	work := gitRepo(t)
	for _, ft := range tasks {
		git(t, work, "branch", ft.branch, "main")
	}
	git(t, work, "checkout", "-q", "main")
	bare := filepath.Join(t.TempDir(), "app.git")
	git(t, work, "clone", "-q", "--bare", work, bare)

	alive := func() *apiClient {
		for i, w := range c.workers {
			if w.running() {
				return c.apis[i]
			}
		}
		return nil
	}
	watch := newHostWatch(dataDirs, alive)
	t.Cleanup(watch.end)
	for i, ft := range tasks {
		plan := lowRiskPlan("file://" + bare)
		plan.Branch, plan.Description = ft.branch, "Add a greeting file "+ft.marker
		plan.Subtasks[0].Description = "write hello.txt " + ft.marker
		c.apis[i%fleetHosts].startTask(ft.id, plan)
	}
	c.logf("%d tasks started", fleetTasks)

	// Each task keeps the host of its first run. The host with the most
	// tasks is the one to kill; the others' second reviews go on.
	byHost := map[string][]*fleetTask{}
	for _, ft := range tasks {
		st := c.apis[0].waitFor(ft.id, "a host", time.Minute, func(st task.State) bool { return len(hostNotes(st)) > 0 })
		ft.host = strings.TrimPrefix(hostNotes(st)[0], "runs on host ")
		byHost[ft.host] = append(byHost[ft.host], ft)
	}
	victim := ""
	for i := range fleetHosts {
		if h := fmt.Sprintf("host-%d", i); len(byHost[h]) > len(byHost[victim]) {
			victim = h
		}
	}
	for _, ft := range tasks {
		if ft.host != victim {
			close(ft.gate)
		}
	}
	c.logf("tasks by host: %s; %s is the one to kill", hostCounts(byHost), victim)

	// The victim's slots fill with second reviews, which wait.
	want := min(fleetSlots, len(byHost[victim]))
	var held []*fleetTask
	eventually(t, 4*time.Minute, "second reviews held on "+victim, func() (bool, error) {
		held = held[:0]
		for _, r := range reviewer.Requests() {
			for _, ft := range byHost[victim] {
				if r.Turn == ft.held && !r.Retry {
					held = append(held, ft)
				}
			}
		}
		return len(held) >= want, fmt.Errorf("%d of %d held; executor served %d, reviewer %d turns", len(held), want, executor.Served(), reviewer.Served())
	})
	eventually(t, 10*time.Second, "the held reviews seen in /proc", func() (bool, error) {
		peak, _, _, _ := watch.result()
		return peak[victim] >= want, fmt.Errorf("peak %v", peak)
	})
	watch.kill(victim)
	c.workers[hostIndex(victim)].kill()
	c.logf("%s killed (SIGKILL) holding %d second reviews", victim, len(held))
	for _, ft := range byHost[victim] {
		close(ft.gate)
	}

	for _, ft := range tasks {
		st := alive().waitFor(ft.id, "done", 3*time.Minute, func(st task.State) bool {
			return st.Status == task.StatusDone || st.Underlying() == task.StatusAwaitingAdmin || st.Status == task.StatusTerminated
		})
		if st.Status != task.StatusDone {
			t.Errorf("task %s: status %s (%s), want done", ft.id, st.Status, st.LastError)
			continue
		}
		checkFleetTask(t, ft, st, victim)
		if got := git(t, bare, "show", ft.branch+":hello.txt"); got != "hello" {
			t.Errorf("%s: hello.txt on the repository's branch = %q, want hello", ft.id, got)
		}
	}
	c.logf("every task ended")
	watch.end()

	// Each second round not moved by the kill resumed its session on its
	// host: the codex request carries the first round and the issue.
	var resumed int
	for _, ft := range tasks {
		i := slices.IndexFunc(executor.AgentRequests(), func(r fakemodel.Request) bool { return r.Turn == ft.round2 })
		if i < 0 {
			t.Errorf("%s: codex made no second-round request", ft.id)
			continue
		}
		r := executor.AgentRequests()[i]
		switch {
		case r.Text("first-round report") && r.Text(helloIssue) && !r.Text("moved to a new machine"):
			resumed++
		case ft.host != victim || containsTask(held, ft):
			t.Errorf("%s: the second round did not resume the first round's session on %s", ft.id, ft.host)
		}
	}
	c.logf("%d second rounds resumed their sessions", resumed)
	// The held reviews died with their host; each review after the move
	// is told where the task comes from.
	for _, ft := range held {
		var told bool
		for _, r := range reviewer.Requests() {
			told = told || (r.Turn == ft.rehomed && r.Text("moved to a new machine"))
		}
		if !told {
			t.Errorf("%s: no review on its new host was told the task moved", ft.id)
		}
	}
	peak, fleetPeak, twice, samples := watch.result()
	c.logf("%d samples; CLIs at once by host: %v in /proc, %v in the fleet view", samples, peak, fleetPeak)
	for host, n := range peak {
		if n > fleetSlots || fleetPeak[host] > fleetSlots {
			t.Errorf("%s ran %d CLIs at once (%d in the fleet view), runner.slots is %d", host, n, fleetPeak[host], fleetSlots)
		}
	}
	if over := watch.overSlots(); over != "" {
		t.Errorf("the runs when a host first went past its slots:\n%s", over)
	}
	for _, s := range twice {
		t.Error(s)
	}
}

// startRunnerHosts starts Temporal on PostgreSQL and fleetHosts workers
// as runner hosts host-0, host-1, …, each with its own data_dir (returned
// by host) and HOMEs, the executor Codex and the reviewer Claude Code.
func startRunnerHosts(t *testing.T, admin string, executor, reviewer *fakemodel.Server) (*scaleCluster, map[string]string) {
	t.Helper()
	dbs := newScaleDatabases(t, admin)
	c := &scaleCluster{t: t, dbs: dbs, began: time.Now()}
	frontend := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(frontend)
	key := "AMPFLOW_TEMPORAL_API_KEY=hosts-test-key"
	c.temporal = &clusterProc{t: t, name: "ampflow temporal", ready: "ready in",
		args: []string{"temporal", "--temporal-db", dbs.temporal, "--temporal-port", port, "--ui-port", "0"}, env: []string{key}}
	t.Cleanup(c.temporal.stop)
	c.temporal.start()
	dataDirs := map[string]string{}
	for i := range fleetHosts {
		host := fmt.Sprintf("host-%d", i)
		dataDirs[host] = filepath.Join(t.TempDir(), "data")
		w := &clusterProc{t: t, name: "worker " + host, ready: "worker ", api: fmt.Sprintf("127.0.0.1:%d", freePort(t)), args: []string{"worker"}}
		w.env = append([]string{key,
			"AMPFLOW_TEMPORAL_ADDRESS=" + frontend, "AMPFLOW_TEMPORAL_NAMESPACE=default", "AMPFLOW_TEMPORAL_TASK_QUEUE=ampflow-hosts",
			"AMPFLOW_HTTP_ADDR=" + w.api, "AMPFLOW_DATA_DIR=" + dataDirs[host], "AMPFLOW_SSOT_URL=" + dbs.ssot,
			"AMPFLOW_ADMINS=" + httpapi.OpenName, "AMPFLOW_LOG_LEVEL=warn",
			"AMPFLOW_AUTH_DECISION_KEY=" + strings.Repeat(fmt.Sprint(7), 64),
			"AMPFLOW_RUNNER_HOST=" + host, "AMPFLOW_RUNNER_HOST_TIMEOUT=" + hostTimeout.String(),
			fmt.Sprintf("AMPFLOW_RUNNER_SLOTS=%d", fleetSlots),
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
	return c, dataDirs
}

// checkFleetTask checks a done task's hosts: one, or, for a task of the
// killed host, a move from it.
func checkFleetTask(t *testing.T, ft *fleetTask, st task.State, victim string) {
	t.Helper()
	notes := hostNotes(st)
	if ft.host != victim {
		if len(notes) != 1 {
			t.Errorf("%s: host timeline %q, want one note: runs on host %s", ft.id, notes, ft.host)
		}
		return
	}
	moved := "re-homed from host " + victim + " to host "
	if len(notes) != 2 || !strings.HasPrefix(notes[1], moved) || !strings.Contains(notes[1], ": "+victim+" not seen since ") ||
		strings.HasPrefix(notes[1], moved+victim) {
		t.Errorf("%s: host timeline %q, want the re-home note %q…", ft.id, notes, moved)
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

func hostIndex(host string) int {
	var i int
	fmt.Sscanf(host, "host-%d", &i)
	return i
}

func hostCounts(byHost map[string][]*fleetTask) string {
	var parts []string
	for i := range fleetHosts {
		h := fmt.Sprintf("host-%d", i)
		parts = append(parts, fmt.Sprintf("%s %d", h, len(byHost[h])))
	}
	return strings.Join(parts, ", ")
}

func containsTask(list []*fleetTask, ft *fleetTask) bool {
	return slices.Contains(list, ft)
}
