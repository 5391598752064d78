package amcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/activities/contract"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/workflows/gate"
)

// GateID is the id of the gate deciding contract id.
func GateID(contractID string) string {
	return "gate_" + strings.TrimPrefix(contractID, contract.IDPrefix)
}

// WorkflowGates are the Gates of the action gate: a contract's gate is a
// gate workflow (which stores its row in the gates table), and its status
// is read there.
type WorkflowGates struct {
	// Start starts a gate workflow (gate.Start on the worker's queue).
	Start func(ctx context.Context, in gate.Input) (gate.Started, error)
	Store *ssot.DB
}

// Open implements Gates.
func (g WorkflowGates) Open(ctx context.Context, c contract.Contract, digest string) (string, error) {
	id := GateID(c.ID)
	agent := strings.TrimPrefix(c.Owner, "agent:")
	params, _ := json.Marshal(c.Parameters)
	in := gate.Input{
		GateID: id, Kind: gate.KindContract, AgentID: agent,
		Summary:        fmt.Sprintf("contract %s: %s, risk %d (%s), needs %s", c.ID, c.Primitive, c.PrimitiveRiskScore, c.Risk.Level, c.Risk.MinimumHandling),
		ProposedAction: fmt.Sprintf("execute %s with %s", c.Primitive, params),
		Reasons:        append([]string{"minimumHandling " + string(c.Risk.MinimumHandling)}, c.Risk.Reasoning...),
		Contract: &gate.ContractRef{
			ID: c.ID, Primitive: c.Primitive, Parameters: c.Parameters, Digest: digest,
			Level: c.Risk.Level, MinimumHandling: string(c.Risk.MinimumHandling),
		},
		ReceivedAt: c.IssuedAt,
		// An approval after the contract expired could not be redeemed.
		ExpiresAt: c.ExpiresAt,
	}
	if _, err := g.Start(ctx, in); err != nil {
		return "", err
	}
	return id, nil
}

// Status implements Gates.
func (g WorkflowGates) Status(ctx context.Context, gateID string) (string, string, error) {
	row, err := g.Store.Gate(ctx, gateID)
	if errors.Is(err, ssot.ErrNotFound) {
		// The gate workflow stores its row in its first step.
		return string(gate.StatusPending), "", nil
	}
	if err != nil {
		return "", "", err
	}
	return row.Status, row.ResolvedBy, nil
}
