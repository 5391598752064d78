// Package amcp serves ampflow's risk contracts over HTTP in the shape of
// AMCP (decide, then execute): POST /v1/decide resolves an intent to one
// primitive of the catalog and issues a signed, single-use contract;
// GET /v1/contracts/{contractId} shows where it stands; POST /v1/execute
// redeems it for its execution blueprint. Contracts whose minimum handling
// is strict_confirm or human_required open a gate, and execute only with
// the approvalToken its approval issues.
package amcp

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/ampflow/ampflow/activities/contract"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// AMCP's error codes.
const (
	CodeUnauthorized        task.Code = "UNAUTHORIZED"
	CodeIntentTooLong       task.Code = "INTENT_TOO_LONG"
	CodeNotFound            task.Code = "CONTRACT_NOT_FOUND"
	CodeExpired             task.Code = "CONTRACT_EXPIRED"
	CodeAlreadyRedeemed     task.Code = "CONTRACT_ALREADY_REDEEMED"
	CodeInvalid             task.Code = "CONTRACT_INVALID"
	CodeApprovalRequired    task.Code = "APPROVAL_REQUIRED"
	CodeRateLimitExceeded   task.Code = "RATE_LIMIT_EXCEEDED"
	CodeProviderUnavailable task.Code = "PROVIDER_UNAVAILABLE"
)

// Codes maps each AMCP code to its HTTP status.
var Codes = map[task.Code]int{
	CodeUnauthorized:        http.StatusUnauthorized,
	CodeIntentTooLong:       http.StatusBadRequest,
	CodeNotFound:            http.StatusNotFound,
	CodeExpired:             http.StatusGone,
	CodeAlreadyRedeemed:     http.StatusGone,
	CodeInvalid:             http.StatusUnprocessableEntity,
	CodeApprovalRequired:    http.StatusForbidden,
	CodeRateLimitExceeded:   http.StatusTooManyRequests,
	CodeProviderUnavailable: http.StatusServiceUnavailable,
}

// Contracts keeps contracts (*ssot.DB).
type Contracts interface {
	PutContract(ctx context.Context, c ssot.ContractRow) error
	Contract(ctx context.Context, id string) (ssot.ContractRow, error)
	SetContractGate(ctx context.Context, id, gateID string, now time.Time) error
	DecideContract(ctx context.Context, id, state, by string, now time.Time) error
	RedeemContract(ctx context.Context, id, from string, now time.Time) error
	// GateChain is what the chain of a contract's gate says: a decided
	// contract's row is checked against it before it is trusted.
	GateChain(ctx context.Context, gateID string) (ssot.GateChain, error)
}

var _ Contracts = (*ssot.DB)(nil)

// Gate statuses as Gates reports them.
const (
	GatePending  = "pending"
	GateApproved = "approved"
	GateRejected = "rejected"
)

// Gates opens the gate of a contract that needs an approval and reads
// where it stands. The wiring backs it with the gate workflow.
type Gates interface {
	// Open opens the gate deciding c (bound to digest) and returns its id.
	// Opening the same contract's gate again returns the same id.
	Open(ctx context.Context, c contract.Contract, digest string) (gateID string, err error)
	// Status is pending, approved or rejected, and who resolved it.
	Status(ctx context.Context, gateID string) (status, by string, err error)
}

// Options configure the handlers.
type Options struct {
	Catalog *contract.Catalog
	Store   Contracts
	// Gates opens the gates; nil refuses contracts that need one (503).
	Gates Gates
	// Secret signs contracts and approval tokens; empty serves every
	// request with 503 PROVIDER_UNAVAILABLE.
	Secret []byte
	// TTL is a contract's life; zero is contract.DefaultTTL.
	TTL time.Duration
	// Authenticate finds the agent of an Authorization header's bearer
	// key (gate.agents, shared with the signals); nil refuses everyone.
	Authenticate func(authorization string) (agent string, ok bool)
	// Rate is the requests one key may make a minute; zero is 120.
	Rate   int
	Now    func() time.Time
	Logger *slog.Logger
}

// Handlers serves the contracts. Build them with Register.
type Handlers struct {
	o     Options
	limit *httpapi.Limiter
	api   *httpapi.Server
	log   *slog.Logger
}

// Register builds the handlers and adds the routes, their OpenAPI
// operations and schemas, and AMCP's error codes to api. The routes are
// Open: they take agent keys, which the handlers check, not API tokens.
func Register(api *httpapi.Server, o Options) *Handlers {
	if o.TTL <= 0 {
		o.TTL = contract.DefaultTTL
	}
	if o.Rate <= 0 {
		o.Rate = 120
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Catalog == nil {
		o.Catalog = contract.Default()
	}
	h := &Handlers{o: o, limit: httpapi.NewLimiter(o.Rate, time.Minute), api: api, log: o.Logger}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	api.Add(httpapi.Spec{Schemas: schemas(), Codes: Codes},
		httpapi.Route{Pattern: "POST /v1/decide", Open: true, AgentKey: h.isKey, Handler: h.decide, Operation: decideOperation()},
		httpapi.Route{Pattern: "GET /v1/contracts/{contractId}", Open: true, AgentKey: h.isKey, Handler: h.getContract, Operation: contractOperation()},
		httpapi.Route{Pattern: "POST /v1/execute", Open: true, AgentKey: h.isKey, Handler: h.execute, Operation: executeOperation()},
	)
	return h
}

// isKey reports whether an Authorization header holds an agent's key.
func (h *Handlers) isKey(authorization string) bool {
	if h.o.Authenticate == nil {
		return false
	}
	_, ok := h.o.Authenticate(authorization)
	return ok
}

// owner authenticates r by its agent key and returns whose it is
// ("agent:<id>"); an empty owner is refused.
func (h *Handlers) owner(r *http.Request) string {
	if h.o.Authenticate == nil {
		return ""
	}
	agent, ok := h.o.Authenticate(r.Header.Get("Authorization"))
	if !ok || agent == "" {
		return ""
	}
	return "agent:" + agent
}

// admit authenticates and rate-limits r; it answers the refusal itself
// and returns "" when r may not go on.
func (h *Handlers) admit(w http.ResponseWriter, r *http.Request) string {
	if len(h.o.Secret) == 0 {
		h.api.Error(w, r, task.Errorf(CodeProviderUnavailable, "contracts are not served: no signing secret (gate.contract_secret_env names an unset variable)"))
		return ""
	}
	owner := h.owner(r)
	if owner == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ampflow contracts"`)
		h.api.Error(w, r, task.Errorf(CodeUnauthorized, "an agent key (gate.agents) is required as a bearer token"))
		return ""
	}
	ok, st := h.limit.Take(owner, h.o.Now())
	st.Headers(w)
	if !ok {
		h.api.Error(w, r, task.Errorf(CodeRateLimitExceeded, "more than %d contract requests a minute from this key; retry after %d s", st.Limit, st.RetryAfter))
		return ""
	}
	return owner
}
