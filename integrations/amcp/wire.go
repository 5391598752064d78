package amcp

import (
	"time"

	"github.com/ampflow/ampflow/activities/contract"
)

// DecideRequest is the body of POST /v1/decide.
type DecideRequest struct {
	// Intent says in words what the agent wants done; at most 512
	// characters.
	Intent    string         `json:"intent"`
	Context   *DecideContext `json:"context,omitempty"`
	SessionID string         `json:"sessionId,omitempty"`
}

// DecideContext narrows a resolution and gives the parameters.
type DecideContext struct {
	// Provider keeps the resolution to one provider's primitives (git,
	// github, npm, ...).
	Provider   string         `json:"provider,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
	// MinimumHandling asks for stricter handling than the primitive's;
	// a lower one changes nothing (escalation only).
	MinimumHandling contract.Handling `json:"minimumHandling,omitempty"`
}

// DecideResponse is the answer of POST /v1/decide.
type DecideResponse struct {
	Decision           contract.Decision `json:"decision"`
	ContractID         string            `json:"contractId,omitempty"`
	Primitive          string            `json:"primitive,omitempty"`
	PrimitiveRiskScore *int              `json:"primitiveRiskScore,omitempty"`
	Risk               *contract.Risk    `json:"risk,omitempty"`
	ExpiresAt          *time.Time        `json:"expiresAt,omitempty"`
	// State is the new contract's: issued, or awaiting_approval when a
	// gate was opened (GateID).
	State  string `json:"state,omitempty"`
	GateID string `json:"gateId,omitempty"`
	// Question and Candidates answer a CLARIFY.
	Question   string   `json:"question,omitempty"`
	Candidates []string `json:"candidates,omitempty"`
	// Missing names the parameters an INSUFFICIENT lacks.
	Missing []string `json:"missing,omitempty"`
	// Reason says why a NO_MATCH.
	Reason string `json:"reason,omitempty"`
}

// ContractView is the answer of GET /v1/contracts/{contractId}.
type ContractView struct {
	ContractID         string            `json:"contractId"`
	State              string            `json:"state"`
	Primitive          string            `json:"primitive"`
	Parameters         map[string]any    `json:"parameters"`
	PrimitiveRiskScore int               `json:"primitiveRiskScore"`
	Risk               contract.Risk     `json:"risk"`
	SessionID          string            `json:"sessionId,omitempty"`
	IssuedAt           time.Time         `json:"issuedAt"`
	ExpiresAt          time.Time         `json:"expiresAt"`
	Digest             string            `json:"digest"`
	GateID             string            `json:"gateId,omitempty"`
	DecidedBy          string            `json:"decidedBy,omitempty"`
	ApprovalToken      string            `json:"approvalToken,omitempty"`
	RedeemedAt         *time.Time        `json:"redeemedAt,omitempty"`
	MinimumHandling    contract.Handling `json:"-"`
}

// ExecuteRequest is the body of POST /v1/execute.
type ExecuteRequest struct {
	ContractID string `json:"contractId"`
	// ApprovalToken is required when the contract's minimum handling is
	// strict_confirm or human_required.
	ApprovalToken string `json:"approvalToken,omitempty"`
}

// ExecuteResponse is the blueprint POST /v1/execute returns.
type ExecuteResponse struct {
	ContractID  string                  `json:"contractId"`
	Primitive   string                  `json:"primitive"`
	Endpoint    string                  `json:"endpoint,omitempty"`
	Method      string                  `json:"method,omitempty"`
	Command     []string                `json:"command,omitempty"`
	Parameters  contract.ParameterSpecs `json:"parameters"`
	Values      map[string]any          `json:"values"`
	Auth        *contract.Auth          `json:"auth,omitempty"`
	ContentType string                  `json:"contentType,omitempty"`
	ExecutedAt  time.Time               `json:"executedAt"`
}
