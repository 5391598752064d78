package runshift

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ampflow/ampflow/workflows/gate"
)

// Metrics are the gate's Prometheus counters.
type Metrics struct {
	signals  *prometheus.CounterVec
	gates    prometheus.Counter
	costUSD  *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	mismatch *prometheus.CounterVec
	resolved *prometheus.CounterVec
	// projects are the configured projects, the only project labels;
	// any other is OtherProject, so an agent posting made-up project ids
	// cannot grow the metrics without end.
	projects map[string]bool
}

// OtherProject is the project label of a project not configured.
const OtherProject = "other"

// ForProjects limits the project label to projects, and returns m.
func (m *Metrics) ForProjects(projects []string) *Metrics {
	if m == nil {
		return nil
	}
	m.projects = map[string]bool{"": true} // no project is a value of its own
	for _, p := range projects {
		m.projects[p] = true
	}
	return m
}

// NewMetrics registers the gate's counters on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		signals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampflow_gate_signals_total",
			Help: "Signals by agent and outcome: approved (no gate), pending (gated), duplicate, budget_exceeded."}, []string{"agent", "outcome"}),
		gates: prometheus.NewCounter(prometheus.CounterOpts{Name: "ampflow_gate_gates_opened_total", Help: "Gates opened for signals."}),
		costUSD: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampflow_gate_cost_usd_total",
			Help: "Cost of signals in USD by agent and project, as counted against budgets."}, []string{"agent", "project"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampflow_gate_tokens_total",
			Help: "Tokens of signals by agent and direction (input, output)."}, []string{"agent", "direction"}),
		mismatch: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampflow_gate_cost_mismatch_total",
			Help: "Signals whose reported cost differs from the computed one by more than 10%."}, []string{"agent"}),
		resolved: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ampflow_gate_gates_resolved_total",
			Help: "Gates resolved, by status: approved or rejected (expired gates are rejected)."}, []string{"status"}),
	}
	if reg != nil {
		m.signals = register(reg, m.signals)
		m.gates = register(reg, m.gates)
		m.costUSD = register(reg, m.costUSD)
		m.tokens = register(reg, m.tokens)
		m.mismatch = register(reg, m.mismatch)
		m.resolved = register(reg, m.resolved)
	}
	return m
}

// register registers c, or returns the collector registered before under
// its name (a second runtime on one registry).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if prev, ok := are.ExistingCollector.(C); ok {
				return prev
			}
		}
		panic(err)
	}
	return c
}

func (m *Metrics) signal(agent, outcome string) {
	if m != nil {
		m.signals.WithLabelValues(agent, outcome).Inc()
	}
}

// Resolved counts a gate resolved with status.
func (m *Metrics) Resolved(status string) {
	if m != nil {
		m.resolved.WithLabelValues(status).Inc()
	}
}

func (m *Metrics) gate() {
	if m != nil {
		m.gates.Inc()
	}
}

func (m *Metrics) spend(agent, project string, c gate.Cost, counted float64) {
	if m == nil {
		return
	}
	if !m.projects[project] {
		project = OtherProject
	}
	m.costUSD.WithLabelValues(agent, project).Add(counted)
	m.tokens.WithLabelValues(agent, "input").Add(float64(c.InputTokens))
	m.tokens.WithLabelValues(agent, "output").Add(float64(c.OutputTokens))
	if c.Mismatch {
		m.mismatch.WithLabelValues(agent).Inc()
	}
}
