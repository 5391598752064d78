package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoalsPlanner loads the planner configuration docs/goals.md shows,
// then checks what Validate refuses of goals.*.
func TestGoalsPlanner(t *testing.T) {
	raw, err := os.ReadFile("../docs/goals.md")
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, b := range strings.Split(string(raw), "```yaml\n")[1:] {
		if y, _, _ := strings.Cut(b, "```"); strings.HasPrefix(y, "goals:\n") {
			block = y
		}
	}
	if block == "" {
		t.Fatal("docs/goals.md shows no goals: configuration")
	}
	file := filepath.Join(t.TempDir(), "ampflow.yaml")
	if err := os.WriteFile(file, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadEnv(New(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := cfg.Goals.Planner
	if !p.On() || p.Runner != "claude" || p.Sandbox != SandboxOn || p.Timeout != DefaultPlannerTimeout || cfg.Goals.PlannerRounds != 3 {
		t.Errorf("goals %+v", cfg.Goals)
	}
	cases := []struct {
		name, key string
		set       func(*Goals)
	}{
		{"Rounds", "goals.planner_rounds", func(g *Goals) { g.PlannerRounds = 0 }},
		{"Runner", "goals.planner.runner", func(g *Goals) { g.Planner.Runner = "vim" }},
		{"ACP", "goals.planner.command", func(g *Goals) { g.Planner.Runner, g.Planner.Command = RunnerACP, nil }},
		{"Sandbox", "goals.planner.sandbox", func(g *Goals) { g.Planner.Sandbox = "maybe" }},
		{"Cost", "goals.planner.max_cost_usd", func(g *Goals) { g.Planner.MaxCostUSD = -1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := cfg
			c.set(&bad.Goals)
			if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), c.key) {
				t.Errorf("err %v, want %s named", err, c.key)
			}
		})
	}
}
