package runshift

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/config/pricing"
	"github.com/ampflow/ampflow/workflows/gate"
)

// TestMetricsProjectsConfigured: the cost metric names only configured
// projects; any other project an agent posts counts as "other".
func TestMetricsProjectsConfigured(t *testing.T) {
	cfg := config.Gate{Agents: []config.GateAgent{{ID: "a", Projects: []string{"job-search", "*"}}}}
	prices := config.Pricing{Budgets: []pricing.Budget{{Project: "payroll", Period: "day", USD: 1}}}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg).ForProjects(ConfiguredProjects(cfg, prices))
	for _, p := range []string{"job-search", "payroll", "made-up-1", "made-up-2", ""} {
		m.spend("a", p, gate.Cost{}, 1)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "ampflow_gate_cost_usd_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "project" {
					got[l.GetValue()] += mt.GetCounter().GetValue()
				}
			}
		}
	}
	// No project keeps its own (empty) label; made-up ones share OtherProject.
	want := map[string]float64{"job-search": 1, "payroll": 1, "": 1, OtherProject: 2}
	if !maps.Equal(got, want) {
		t.Errorf("cost by project label %v, want %v", got, want)
	}
}
