// Package gate is the action gate: one Temporal workflow per gate holds an
// agent's action (a runshift signal, or an AMCP contract that needs a
// human) until the admins approve or reject it through the decision
// engine, then records the resolution and calls the agent back.
package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
)

// WorkflowType is the registered name of the gate workflow.
const WorkflowType = "Gate"

// WorkflowID is the workflow id of gate gateID; it is also the subject of
// the gate's decisions and the chain its records are kept in.
func WorkflowID(gateID string) string { return ssot.GateSubject(gateID) }

// Kind says what a gate holds.
type Kind string

// Gate kinds.
const (
	// KindSignal gates a runshift signal's proposed action.
	KindSignal Kind = "signal"
	// KindContract gates an AMCP contract whose handling needs a human.
	KindContract Kind = "contract"
)

// Status is where a gate stands. The store keeps it too, readable by
// gate id without Temporal: (*ssot.DB).Gate(ctx, gateID).Status, which the
// gate's chain decides (ssot.GateChain).
type Status string

// Gate statuses. A gate that expires unanswered is rejected.
const (
	StatusPending  Status = "pending"
	StatusApproved Status = "approved"
	StatusRejected Status = "rejected"
)

// Decision kinds a gate asks.
const (
	// DecisionSignal asks whether a signal's proposed action may go ahead.
	DecisionSignal decision.Kind = "gate_signal"
	// DecisionContract asks whether a contract may be executed; its
	// context names the contract id, primitive and parameters.
	DecisionContract decision.Kind = "gate_contract"
)

// DecisionKinds returns the kinds of the decisions gates raise, for the
// API's document: GET /v1/decisions lists them.
func DecisionKinds() []decision.Kind { return []decision.Kind{DecisionSignal, DecisionContract} }

// Input starts a gate. One struct, so fields can be added later.
type Input struct {
	// GateID is the gate's id ("gate_…"); WorkflowID(GateID) is its
	// workflow id.
	GateID string `json:"gate_id"`
	Kind   Kind   `json:"kind"`
	// RunID is the agent's run id (signals); contracts may leave it empty.
	RunID     string `json:"run_id,omitempty"`
	AgentID   string `json:"agent_id"`
	ProjectID string `json:"project_id,omitempty"`
	// Summary is what the agent did; ProposedAction what happens next if
	// the admins approve.
	Summary        string            `json:"summary"`
	ProposedAction string            `json:"proposed_action"`
	Artifacts      []json.RawMessage `json:"artifacts,omitempty"`
	Cost           Cost              `json:"cost"`
	// WebhookURL, when set, receives the signed resolution.
	WebhookURL string `json:"webhook_url,omitempty"`
	// Reasons say why the gate fired (the agent declared it, a rule, a
	// budget at 80 %).
	Reasons []string `json:"reasons,omitempty"`
	// History sums up the agent's recent signals for the admins.
	History []string `json:"history,omitempty"`
	// CallbackFor is how long the resolution is retried to WebhookURL;
	// zero is DefaultCallbackFor.
	CallbackFor time.Duration `json:"callback_for,omitempty"`
	// Contract is set on contract gates.
	Contract *ContractRef `json:"contract,omitempty"`
	// ReceivedAt is when the signal or contract was accepted.
	ReceivedAt time.Time `json:"received_at"`
	// ExpiresAt, when set, is when what the gate holds stops being valid
	// (a contract's expiresAt): the gate's decision expires, rejected, at
	// the earlier of it and the policy's expire_after.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// Cost is what a signal spent, as reported and as recomputed.
type Cost struct {
	Model        string  `json:"model,omitempty"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	ReportedUSD  float64 `json:"reported_usd"`
	// ComputedUSD is the cost from the pricing table; zero when the model
	// is not priced.
	ComputedUSD float64 `json:"computed_usd"`
	// Mismatch says the reported cost differs from the computed one by
	// more than 10 %.
	Mismatch bool `json:"mismatch,omitempty"`
}

// ContractRef is the contract a contract gate decides on.
type ContractRef struct {
	ID         string         `json:"id"`
	Primitive  string         `json:"primitive"`
	Parameters map[string]any `json:"parameters"`
	// Digest binds the contract: an approval approves exactly it.
	Digest string `json:"digest"`
	// Level is the contract's risk level; MinimumHandling its handling
	// (human_required, strict_confirm).
	Level           string `json:"level"`
	MinimumHandling string `json:"minimum_handling"`
}

// QueryState is the query that returns the gate's State.
const QueryState = "gate.state"

// State is what a gate shows.
type State struct {
	Input  Input  `json:"input"`
	Status Status `json:"status"`
	// Decision is the open decision while the gate is pending.
	Decision *decision.Decision `json:"decision,omitempty"`
	// Outcome is how the gate's decision was closed.
	Outcome    *decision.Outcome `json:"outcome,omitempty"`
	ResolvedAt time.Time         `json:"resolved_at,omitzero"`
	ResolvedBy string            `json:"resolved_by,omitempty"`
	// Callback is where the webhook delivery stands.
	Callback CallbackState `json:"callback"`
}

// CallbackState tracks the delivery of the resolution to the webhook.
type CallbackState struct {
	// Status is none (no webhook), waiting, delivered or failed.
	Status   string    `json:"status"`
	Attempts int       `json:"attempts"`
	LastAt   time.Time `json:"last_at,omitzero"`
	LastErr  string    `json:"last_error,omitempty"`
}

// Callback statuses.
const (
	CallbackNone      = "none"
	CallbackWaiting   = "waiting"
	CallbackDelivered = "delivered"
	CallbackFailed    = "failed"
)

// Started is what Start did.
type Started struct {
	GateID     string `json:"gate_id"`
	WorkflowID string `json:"workflow_id"`
	// Existing says the gate id was taken: nothing was started and the
	// existing gate stands.
	Existing bool `json:"existing"`
}

// Start starts the gate in, idempotently: a gate id that is taken, by a
// running or an ended gate, returns the existing gate and starts nothing.
func Start(ctx context.Context, c client.Client, queue string, in Input) (Started, error) {
	if in.GateID == "" {
		return Started{}, errors.New("starting a gate: gate_id is required")
	}
	if in.Kind != KindSignal && in.Kind != KindContract {
		return Started{}, fmt.Errorf("starting gate %s: kind: %q is not signal or contract", in.GateID, in.Kind)
	}
	if in.AgentID == "" {
		return Started{}, fmt.Errorf("starting gate %s: agent_id is required", in.GateID)
	}
	if in.Kind == KindContract && in.Contract == nil {
		return Started{}, fmt.Errorf("starting gate %s: contract: required for a contract gate", in.GateID)
	}
	id := WorkflowID(in.GateID)
	out := Started{GateID: in.GateID, WorkflowID: id}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                queue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Tell a taken id apart from a new start.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, WorkflowType, in)
	if err != nil {
		var taken *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &taken) {
			out.Existing = true
			return out, nil
		}
		return Started{}, fmt.Errorf("starting gate %s: %w", in.GateID, err)
	}
	return out, nil
}
