package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
)

func scrape(t *testing.T, h *harness) string {
	t.Helper()
	r := h.do(t, "GET", "/metrics", adminToken, "")
	wantStatus(t, r, http.StatusOK)
	return string(r.body)
}

func wantLine(t *testing.T, text, line string) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return
		}
	}
	t.Errorf("/metrics lacks the line %q", line)
}

func TestMetricsEndpoint(t *testing.T) {
	h := newHarness(t, false)
	h.do(t, "GET", "/v1/tasks", executorToken, "")
	h.do(t, "GET", "/v1/tasks", executorToken, "")
	h.do(t, "GET", "/v1/tasks", "", "")
	h.do(t, "GET", "/nowhere", "", "")
	h.srv.metrics.CountRunnerUsage("claude", amp.RoleReviewer, 1200, 300, 0.25)
	h.srv.metrics.CountAccountSpend("claude", amp.RoleReviewer, "team-b", 0.25)
	h.srv.metrics.TemporalHandler().WithTags(map[string]string{"namespace": "default"}).Counter("temporal_request").Inc(3)

	text := scrape(t, h)
	wantLine(t, text, `ampflow_http_requests_total{code="200",route="GET /v1/tasks"} 2`)
	wantLine(t, text, `ampflow_http_requests_total{code="401",route="GET /v1/tasks"} 1`)
	wantLine(t, text, `ampflow_http_requests_total{code="404",route="unmatched"} 1`)
	wantLine(t, text, `ampflow_http_request_duration_seconds_count{code="200",route="GET /v1/tasks"} 2`)
	wantLine(t, text, `temporal_request{namespace="default"} 3`)
	wantLine(t, text, `ampflow_runner_cost_usd_total{role="reviewer",runner="claude"} 0.25`)
	wantLine(t, text, `ampflow_runner_tokens_total{direction="input",role="reviewer",runner="claude"} 1200`)
	wantLine(t, text, `ampflow_runner_account_cost_usd_total{account="team-b",role="reviewer",runner="claude"} 0.25`)
	wantLine(t, text, `ampflow_runner_tokens_total{direction="output",role="reviewer",runner="claude"} 300`)
	if !strings.Contains(text, "go_goroutines ") {
		t.Errorf("/metrics lacks the Go runtime metrics")
	}
}

func TestTemporalHandler(t *testing.T) {
	m := NewMetrics()
	base := m.TemporalHandler()
	ns := base.WithTags(map[string]string{"namespace": "default", "task-queue": "ampflow"})

	ns.Counter("temporal_request").Inc(2)
	// A handler made again with the same tags feeds the same series.
	base.WithTags(map[string]string{"task-queue": "ampflow", "namespace": "default"}).Counter("temporal_request").Inc(1)
	ns.Counter("temporal_request").Inc(-5) // counters never go down
	// The same name with other tag keys is a series of its own.
	ns.WithTags(map[string]string{"operation": "StartWorkflowExecution"}).Counter("temporal_request").Inc(1)
	// A later tag of the same name wins.
	ns.WithTags(map[string]string{"namespace": "other"}).Gauge("temporal_num_pollers").Update(4)
	ns.Gauge("temporal_num_pollers").Update(2)
	ns.Gauge("temporal_num_pollers").Update(1.5)
	timer := ns.Timer("temporal_request_latency")
	timer.Record(20 * time.Millisecond)
	timer.Record(1500 * time.Millisecond)
	timer.Record(5 * time.Minute)
	// A name already used by another kind does not break the family.
	ns.Gauge("temporal_request").Update(7)

	text := newMetricsServer(t, m)
	wantLine(t, text, `temporal_request{namespace="default",task_queue="ampflow"} 3`)
	wantLine(t, text, `temporal_request{namespace="default",operation="StartWorkflowExecution",task_queue="ampflow"} 1`)
	wantLine(t, text, `temporal_num_pollers{namespace="other",task_queue="ampflow"} 4`)
	wantLine(t, text, `temporal_num_pollers{namespace="default",task_queue="ampflow"} 1.5`)
	wantLine(t, text, `temporal_request_latency_bucket{namespace="default",task_queue="ampflow",le="0.025"} 1`)
	wantLine(t, text, `temporal_request_latency_bucket{namespace="default",task_queue="ampflow",le="2.5"} 2`)
	wantLine(t, text, `temporal_request_latency_bucket{namespace="default",task_queue="ampflow",le="+Inf"} 3`)
	wantLine(t, text, `temporal_request_latency_count{namespace="default",task_queue="ampflow"} 3`)
	wantLine(t, text, `temporal_request_latency_sum{namespace="default",task_queue="ampflow"} 301.52`)
	wantLine(t, text, `temporal_request_gauge{namespace="default",task_queue="ampflow"} 7`)
	wantLine(t, text, `# TYPE temporal_request counter`)
	wantLine(t, text, `# TYPE temporal_request_latency histogram`)
}

// newMetricsServer scrapes m through a Server's /metrics.
func newMetricsServer(t *testing.T, m *Metrics) string {
	t.Helper()
	h := &harness{tasks: &fakeTasks{}}
	h.srv = New(Options{Tasks: h.tasks, Metrics: m})
	h.ts = httptestServer(t, h.srv.Handler())
	return scrape(t, h)
}

func TestPromName(t *testing.T) {
	for in, want := range map[string]string{
		"temporal_request": "temporal_request",
		"task-queue":       "task_queue",
		"1st":              "_st",
		"a.b:c":            "a_b_c",
		"":                 "_",
	} {
		if got := promName(in); got != want {
			t.Errorf("promName(%q) = %q, want %q", in, got, want)
		}
	}
}
