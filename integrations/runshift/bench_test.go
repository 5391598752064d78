package runshift

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"

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
	allow := Allow([]string{"127.0.0.1:1", "*.example.com"})
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

// BenchmarkAcceptNoGate takes signals that need no gate through the
// intake, on SQLite, 16 at once: what POST /v1/signals costs besides HTTP.
func BenchmarkAcceptNoGate(b *testing.B) {
	ctx := context.Background()
	db, err := ssot.Open(ctx, filepath.Join(b.TempDir(), "ampflow.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	in, err := NewIntake(config.Default().Gate, config.Default().Pricing, db, nil, func(string) (string, bool) { return "", true }, nil)
	if err != nil {
		b.Fatal(err)
	}
	in.Logger = slog.New(slog.DiscardHandler)
	s := benchSignal(b)
	no := false
	s.GateRequired = &no
	var n atomic.Int64
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s := s
			s.RunID = fmt.Sprintf("run-%d", n.Add(1))
			if _, err := in.Accept(ctx, Agent{ID: s.AgentID}, s); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
