package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
)

// TestExamplesValid keeps examples/ valid AMP/1.0: the plan as task start
// reads it, the payloads as send --type wraps them.
func TestExamplesValid(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "examples")
	now := time.Date(2026, 2, 26, 14, 0, 0, 0, time.UTC)
	read := func(name string) []byte {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		js, err := toJSON(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return js
	}
	plan, err := checkPlan(read("plan.yaml"), "", now)
	if err != nil {
		t.Fatalf("plan.yaml: %v", err)
	}
	if plan.RiskLevel != amp.RiskLow {
		t.Errorf("plan.yaml has risk_level %s, want low", plan.RiskLevel)
	}
	for name, typ := range map[string]amp.Type{"task_result.json": amp.TypeTaskResult, "review_verdict.json": amp.TypeReviewVerdict} {
		m, err := amp.WrapAgent(read(name), typ, "T-2026-001", "", now)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var n int
		switch typ {
		case amp.TypeTaskResult:
			n = len(m.Result().SelfAssessment.CriteriaMet)
		case amp.TypeReviewVerdict:
			n = len(m.Verdict().CriteriaResults)
		}
		if n != len(plan.AcceptanceCriteria) {
			t.Errorf("%s answers %d criteria; plan.yaml has %d", name, n, len(plan.AcceptanceCriteria))
		}
	}
}
