package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/amp"
)

// Metrics is a Prometheus registry holding the API's request metrics,
// the Temporal SDK's metrics (through TemporalHandler) and the Go runtime
// and process collectors. GET /metrics serves it.
type Metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	sdk      *sdkCollector
	// Runners' spend, by runner and role (both from closed lists).
	runnerCost   *prometheus.CounterVec
	runnerTokens *prometheus.CounterVec
	// Runners' spend by account (agents.<role>.accounts, a closed list).
	accountCost *prometheus.CounterVec
}

// NewMetrics returns a fresh registry with every collector registered.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ampflow_http_requests_total",
			Help: "HTTP API requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ampflow_http_request_duration_seconds",
			Help:    "HTTP API request latency by route pattern and status code.",
			Buckets: durationBuckets,
		}, []string{"route", "code"}),
		sdk: newSDKCollector(),
		runnerCost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ampflow_runner_cost_usd_total",
			Help: "Dollars spent by runner-mode agents, by runner and role.",
		}, []string{"runner", "role"}),
		runnerTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ampflow_runner_tokens_total",
			Help: "Tokens used by runner-mode agents, by runner, role and direction (input, output).",
		}, []string{"runner", "role", "direction"}),
		accountCost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ampflow_runner_account_cost_usd_total",
			Help: "Dollars spent by runner-mode agents, by runner, role and account (agents.<role>.accounts); increase over 1d is a day's spend.",
		}, []string{"runner", "role", "account"}),
	}
	m.registry.MustRegister(
		m.requests, m.latency, m.sdk, m.runnerCost, m.runnerTokens, m.accountCost,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// durationBuckets, in seconds, reach past MaxWait so that long polls and
// slow Temporal calls land in a bucket of their own.
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// Registry is the registry, for callers that add collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// TemporalHandler returns the Temporal SDK metrics handler writing into
// this registry; give it to client.Options.MetricsHandler.
func (m *Metrics) TemporalHandler() client.MetricsHandler {
	return sdkHandler{c: m.sdk}
}

func (m *Metrics) observe(route string, code int, d time.Duration) {
	c := strconv.Itoa(code)
	m.requests.WithLabelValues(route, c).Inc()
	m.latency.WithLabelValues(route, c).Observe(d.Seconds())
}

// CountRunnerUsage counts one run's spend; runner and role come from
// closed lists (the configuration's runners, executor and reviewer).
func (m *Metrics) CountRunnerUsage(runner string, role amp.Role, inputTokens, outputTokens int64, usd float64) {
	r := string(role)
	m.runnerCost.WithLabelValues(runner, r).Add(max(0, usd))
	m.runnerTokens.WithLabelValues(runner, r, "input").Add(float64(max(0, inputTokens)))
	m.runnerTokens.WithLabelValues(runner, r, "output").Add(float64(max(0, outputTokens)))
}

// CountAccountSpend counts one run's spend to the runner's account; the
// account comes from the configuration's closed list.
func (m *Metrics) CountAccountSpend(runner string, role amp.Role, account string, usd float64) {
	m.accountCost.WithLabelValues(runner, string(role), account).Add(max(0, usd))
}

func (m *Metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		// A metric that cannot be gathered must not hide all the others.
		ErrorHandling: promhttp.ContinueOnError,
	})
}
