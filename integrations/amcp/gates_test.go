package amcp

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/contract"
	"github.com/ampflow/ampflow/workflows/gate"
)

// A contract that needs approval opens a contract gate named after it,
// bound to its digest, that expires with it.
func TestWorkflowGatesOpen(t *testing.T) {
	at := time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC)
	c := contract.Contract{ID: "cnt_abc", Owner: "agent:deployer", Primitive: "git.force_push",
		Parameters: map[string]any{"branch": "main"}, PrimitiveRiskScore: 105,
		Risk:     contract.Risk{Level: "critical", MinimumHandling: contract.HandlingHumanRequired, Reasoning: []string{"destructiveAction"}},
		IssuedAt: at, ExpiresAt: at.Add(15 * time.Minute)}
	var got gate.Input
	g := WorkflowGates{Start: func(_ context.Context, in gate.Input) (gate.Started, error) {
		got = in
		return gate.Started{GateID: in.GateID}, nil
	}}
	id, err := g.Open(context.Background(), c, "d1")
	if err != nil || id != "gate_abc" || id != GateID(c.ID) {
		t.Fatalf("Open = %q, %v; want gate_abc", id, err)
	}
	if got.GateID != id || got.Kind != gate.KindContract || got.AgentID != "deployer" ||
		got.Summary != "contract cnt_abc: git.force_push, risk 105 (critical), needs human_required" ||
		got.ProposedAction != `execute git.force_push with {"branch":"main"}` ||
		!slices.Equal(got.Reasons, []string{"minimumHandling human_required", "destructiveAction"}) ||
		!got.ReceivedAt.Equal(at) || !got.ExpiresAt.Equal(c.ExpiresAt) {
		t.Errorf("gate input %+v", got)
	}
	if r := got.Contract; r == nil || r.ID != c.ID || r.Digest != "d1" || r.Level != "critical" || r.MinimumHandling != "human_required" {
		t.Errorf("contract ref %+v", got.Contract)
	}
}
