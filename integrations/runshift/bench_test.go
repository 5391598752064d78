package runshift

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ampflow/ampflow/config"
)

func benchSignal(b *testing.B) Signal {
	raw, _ := json.Marshal(payload("run-bench", true))
	var s Signal
	if err := json.Unmarshal(raw, &s); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkValidate checks the runshift example payload.
func BenchmarkValidate(b *testing.B) {
	s := benchSignal(b)
	allow := Allow([]string{"127.0.0.1", "*.example.com"})
	b.ReportAllocs()
	for b.Loop() {
		if fs := s.Validate(allow); len(fs) > 0 {
			b.Fatal(fs)
		}
	}
}

// BenchmarkRulesMatch matches against 20 rules, the last one matching.
func BenchmarkRulesMatch(b *testing.B) {
	var in []config.GateRule
	for i := range 19 {
		in = append(in, config.GateRule{Agent: fmt.Sprintf("agent-%d", i), Action: "(?i)deploy|publish", Gate: config.GateAlways})
	}
	in = append(in, config.GateRule{Project: "job-search", CostOverUSD: 0.01, Action: "(?i)^send\\b", Gate: config.GateAlways})
	rs, err := CompileRules(in)
	if err != nil {
		b.Fatal(err)
	}
	f := Facts{Agent: "resume-tailor", Project: "job-search", Model: "claude-sonnet-4-6", Status: "completed", CostUSD: 0.02, Action: "Send to applicant"}
	b.ReportAllocs()
	for b.Loop() {
		if g, i := rs.Match(f); g != config.GateAlways || i != 19 {
			b.Fatal(g, i)
		}
	}
}

// BenchmarkKeyCheck finds an agent's key among 50.
func BenchmarkKeyCheck(b *testing.B) {
	var agents []config.GateAgent
	env := map[string]string{}
	for i := range 50 {
		k := fmt.Sprintf("K%d", i)
		agents = append(agents, config.GateAgent{ID: fmt.Sprintf("a%d", i), KeyEnv: k})
		env[k] = fmt.Sprintf("rs-amp-key-%d-0123456789abcdef", i)
	}
	ks, err := NewKeys(agents, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		b.Fatal(err)
	}
	h := "Bearer " + env["K49"]
	b.ReportAllocs()
	for b.Loop() {
		if a, ok := ks.Check(h); !ok || a.ID != "a49" {
			b.Fatal(a, ok)
		}
	}
}
