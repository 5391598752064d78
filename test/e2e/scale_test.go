package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

const (
	// scaleTasks is how many tasks the scale-out test runs to done.
	scaleTasks = 20
	// scaleWorkers is how many `ampflow worker` processes share the work.
	scaleWorkers = 3
	// scaleStepWait bounds each wait for one task to reach the next step,
	// a worker's death included: a workflow task it held times out after
	// 10s, and its sticky queue is given up after 5s.
	scaleStepWait = 90 * time.Second
)

// scaleCluster is the Temporal server on PostgreSQL and the workers.
type scaleCluster struct {
	t        *testing.T
	dbs      scaleDatabases
	temporal *clusterProc
	workers  []*clusterProc
	apis     []*apiClient
	began    time.Time
	// decisionKey is the workers' decision key, in hex.
	decisionKey string
}

// TestScaleOut runs Temporal's server on PostgreSQL (`ampflow temporal
// --temporal-db`) and three `ampflow worker` processes on one task queue.
// Twenty tasks are started through one worker's API and played to done
// through the others', each step of a task at another worker, while one
// worker is killed with SIGKILL and another restarted: every task
// reaches done. The checks that need the shared SSOT follow.
func TestScaleOut(t *testing.T) {
	admin := os.Getenv("AMPFLOW_TEST_POSTGRES")
	if admin == "" {
		t.Skip("AMPFLOW_TEST_POSTGRES is not set: the scale-out test needs a PostgreSQL server it may create databases on, e.g. AMPFLOW_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	}
	c := startScaleCluster(t, newScaleDatabases(t, admin))
	ids, agents := c.startTasks()

	// Each task's dispatch is ACKed at another worker than the one that
	// started it; half way, worker 2 is killed.
	dispatches := make([]amp.Message, scaleTasks)
	for i, id := range ids {
		if i == scaleTasks/2 {
			c.workers[2].kill()
			c.logf("worker 2 killed (SIGKILL) with %d of %d dispatches ACKed", i, scaleTasks)
		}
		api := c.api(i, 1)
		dispatches[i] = api.outboxMsg(id, amp.TypeTaskDispatch)
		c.ack(api, dispatches[i])
	}
	c.logf("every dispatch ACKed")

	// Results go in through the workers still up; half way, worker 1 is
	// restarted, and the killed worker 2 comes back.
	for i, id := range ids {
		if i == scaleTasks/2 {
			c.workers[1].stop()
			c.apis[1].reset()
			c.workers[1].start()
			c.logf("worker 1 restarted with %d of %d results in", i, scaleTasks)
			c.workers[2].start()
			c.apis[2].reset()
			c.logf("worker 2 back after its SIGKILL")
		}
		m := agents[i].work(dispatches[i], "hello.txt", "hello from "+id+"\n")
		if c.api(i, 2).submit("/v1/messages", mustJSON(t, m)) {
			t.Errorf("%s: result %s taken as a duplicate", id, m.MsgID)
		}
	}
	c.logf("every result in")

	for i, id := range ids {
		api := c.api(i, 3)
		req := api.outboxMsg(id, amp.TypeReviewRequest)
		c.ack(c.api(i, 4), req)
		if c.api(i, 5).submit("/v1/messages", mustJSON(t, agents[i].verdict(req, amp.DecisionApproved))) {
			t.Errorf("%s: the verdict was taken as a duplicate", id)
		}
	}
	c.logf("every verdict in")

	for i, id := range ids {
		c.api(i, 6).done(id, scaleStepWait)
	}
	c.logf("all %d tasks done", scaleTasks)

	t.Run("RecordsStoredOnce", func(t *testing.T) { c.checkStoredOnce(t, ids) })
	t.Run("AuditVerify", func(t *testing.T) { c.checkAuditVerify(t, ids[0]) })
	t.Run("ChatClickAtAnotherWorker", func(t *testing.T) { c.checkChatClickElsewhere(t) })
}

// startScaleCluster starts `ampflow temporal` on dbs and the workers, all
// stopped when t ends (the databases are dropped after them).
func startScaleCluster(t *testing.T, dbs scaleDatabases) *scaleCluster {
	c := &scaleCluster{t: t, dbs: dbs, began: time.Now()}
	frontend := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(frontend)
	// The frontend requires the key of every worker.
	key := "AMPFLOW_TEMPORAL_API_KEY=scale-test-key"
	c.temporal = &clusterProc{t: t, name: "ampflow temporal", ready: "ready in",
		args: []string{"temporal", "--temporal-db", dbs.temporal, "--temporal-port", port, "--ui-port", "0"},
		env:  []string{key}}
	t.Cleanup(c.temporal.stop)
	c.temporal.start()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	decisionKey := hex.EncodeToString(raw)
	c.decisionKey = decisionKey
	for i := range scaleWorkers {
		w := &clusterProc{t: t, name: fmt.Sprintf("worker %d", i), ready: "worker ",
			api:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			args: []string{"worker"}}
		w.env = []string{
			key,
			"AMPFLOW_TEMPORAL_ADDRESS=" + frontend,
			"AMPFLOW_TEMPORAL_NAMESPACE=default",
			"AMPFLOW_TEMPORAL_TASK_QUEUE=ampflow-scale",
			"AMPFLOW_HTTP_ADDR=" + w.api,
			// Each worker's own local state; with ssot.url the record is shared.
			"AMPFLOW_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
			"AMPFLOW_SSOT_URL=" + dbs.ssot,
			// The open API acts as httpapi.OpenName: make it the admin.
			"AMPFLOW_ADMINS=" + httpapi.OpenName,
			"AMPFLOW_LOG_LEVEL=warn",
			// One decision key for all: any worker checks any API's answers.
			"AMPFLOW_AUTH_DECISION_KEY=" + decisionKey,
		}
		t.Cleanup(w.stop)
		w.start()
		if !strings.Contains(w.output(), "http api") {
			t.Fatalf("%s did not say where its HTTP API is:\n%s", w.name, w.output())
		}
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
	c.logf("temporal on PostgreSQL at %s and %d workers up", frontend, scaleWorkers)
	return c
}

// startTasks starts the tasks through worker 0, each on its own
// repository, and returns their ids and the agents that play them.
func (c *scaleCluster) startTasks() ([]string, []*agent) {
	var ids []string
	var agents []*agent
	for i := range scaleTasks {
		id := fmt.Sprintf("T-2026-9%02d", i)
		repo := gitRepo(c.t)
		c.apis[0].startTask(id, lowRiskPlan(repo))
		ids = append(ids, id)
		agents = append(agents, &agent{t: c.t, repo: repo})
	}
	c.logf("%d tasks started through worker 0", scaleTasks)
	return ids, agents
}

// api picks the API for step of task i: another worker at each step,
// among the workers running.
func (c *scaleCluster) api(i, step int) *apiClient {
	var up []int
	for n, w := range c.workers {
		if w.running() {
			up = append(up, n)
		}
	}
	if len(up) == 0 {
		c.t.Fatal("no worker is running")
	}
	return c.apis[up[(i+step)%len(up)]]
}

func (c *scaleCluster) ack(api *apiClient, m amp.Message) {
	c.t.Helper()
	var res httpapi.SubmitResponse
	if code, resp := api.call("POST", "/v1/acks", httpapi.AckRequest{MsgID: m.MsgID, As: m.To}, &res); code != http.StatusAccepted {
		c.t.Fatalf("ACK of %s at %s answered %d %s", m.MsgID, api.base, code, resp)
	}
}

func (c *scaleCluster) logf(format string, args ...any) {
	c.t.Helper()
	c.t.Logf("%6s  %s", time.Since(c.began).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
