package amcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/contract"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// MaxParameters bounds a contract's parameters, in bytes of JSON: every
// contract is kept.
const MaxParameters = 16 << 10

// maxExecuteBody bounds a POST /v1/execute body, read whole before it is
// decoded so that an expired contract is named first.
const maxExecuteBody = 64 << 10

// codeTooLarge is the API's code of a body over its bound (HTTP 413).
const codeTooLarge task.Code = "too_large"

func (h *Handlers) decide(w http.ResponseWriter, r *http.Request) {
	owner := h.admit(w, r)
	if owner == "" {
		return
	}
	var in DecideRequest
	if err := h.api.Decode(w, r, &in); err != nil {
		h.api.Error(w, r, err)
		return
	}
	if contract.IntentTooLong(in.Intent) {
		h.api.Error(w, r, httpapi.FieldError(CodeIntentTooLong, "intent", fmt.Sprintf("longer than %d characters", contract.MaxIntent)))
		return
	}
	if strings.TrimSpace(in.Intent) == "" {
		h.api.Error(w, r, httpapi.InvalidField("intent", "is required"))
		return
	}
	if len(in.SessionID) > ssot.MaxIDLen {
		h.api.Error(w, r, httpapi.InvalidField("sessionId", fmt.Sprintf("longer than %d bytes", ssot.MaxIDLen)))
		return
	}
	req := contract.Request{Intent: in.Intent}
	if c := in.Context; c != nil && c.Parameters != nil {
		if b, _ := json.Marshal(c.Parameters); len(b) > MaxParameters {
			h.api.Error(w, r, httpapi.InvalidField("context.parameters", fmt.Sprintf("larger than %d bytes of JSON", MaxParameters)))
			return
		}
	}
	if c := in.Context; c != nil {
		req.Provider, req.Parameters, req.Handling = c.Provider, c.Parameters, c.MinimumHandling
		if c.MinimumHandling != "" && c.MinimumHandling.Rank() < 0 {
			h.api.Error(w, r, httpapi.InvalidField("context.minimumHandling", "must be allow, log, confirm, strict_confirm or human_required"))
			return
		}
	}
	res := h.o.Catalog.Resolve(req)
	out := DecideResponse{Decision: res.Decision, Question: res.Question, Candidates: res.Candidates, Missing: res.Missing, Reason: res.Reason}
	if res.Primitive != nil {
		out.Primitive = res.Primitive.Name
	}
	if res.Decision != contract.DecisionExecute {
		httpapi.WriteJSON(w, http.StatusOK, out)
		return
	}
	if res.Risk.MinimumHandling.NeedsApproval() && h.o.Gates == nil {
		h.api.Error(w, r, task.Errorf(CodeProviderUnavailable, "%s needs %s, and this worker opens no gates", out.Primitive, res.Risk.MinimumHandling))
		return
	}
	now := h.o.Now()
	c, err := contract.Issue(res, req.Parameters, owner, in.SessionID, now, h.o.TTL)
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	state := ssot.ContractIssued
	if c.Risk.MinimumHandling.NeedsApproval() {
		state = ssot.ContractAwaitingApproval
	}
	digest := c.Digest()
	row := ssot.ContractRow{
		ID: c.ID, Owner: owner, SessionID: c.SessionID, Primitive: c.Primitive, MinimumHandling: string(c.Risk.MinimumHandling),
		Body: c.Canonical(), Digest: digest, Signature: c.Sign(h.o.Secret), State: state,
		IssuedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt,
	}
	// Stored before its gate opens: the contract is on record whatever
	// becomes of the gate, and an approval finds it.
	if err := h.o.Store.PutContract(r.Context(), row); err != nil {
		h.api.Error(w, r, err)
		return
	}
	if state == ssot.ContractAwaitingApproval {
		gateID, err := h.o.Gates.Open(r.Context(), c, digest)
		if err == nil {
			err = h.o.Store.SetContractGate(r.Context(), c.ID, gateID, now)
		}
		if err != nil {
			h.log.Error("opening the gate of a contract", "contract", c.ID, "err", err)
			h.api.Error(w, r, task.Errorf(CodeProviderUnavailable, "opening the gate of contract %s failed; decide again", c.ID))
			return
		}
		out.GateID = gateID
	}
	out.ContractID, out.PrimitiveRiskScore, out.Risk, out.ExpiresAt, out.State = c.ID, &c.PrimitiveRiskScore, &c.Risk, &c.ExpiresAt, state
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (h *Handlers) getContract(w http.ResponseWriter, r *http.Request) {
	owner := h.admit(w, r)
	if owner == "" {
		return
	}
	v, err := h.view(r.Context(), owner, r.PathValue("contractId"))
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
}

// view reads contract id of owner, checks its signature, brings its
// approval state up to date from its gate and shows it.
func (h *Handlers) view(ctx context.Context, owner, id string) (ContractView, error) {
	row, c, err := h.load(ctx, owner, id)
	if err != nil {
		return ContractView{}, err
	}
	now := h.o.Now()
	if row.State != ssot.ContractRedeemed && !expired(row, c, now) {
		if err := h.verify(row, c); err != nil {
			return ContractView{}, err
		}
	}
	row, err = h.sync(ctx, row, now)
	if err != nil {
		return ContractView{}, err
	}
	if err := h.chained(ctx, row); err != nil {
		return ContractView{}, err
	}
	v := ContractView{
		ContractID: c.ID, State: row.State, Primitive: c.Primitive, Parameters: c.Parameters,
		PrimitiveRiskScore: c.PrimitiveRiskScore, Risk: c.Risk, SessionID: c.SessionID,
		IssuedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt, Digest: row.Digest, GateID: row.GateID, DecidedBy: row.DecidedBy,
	}
	switch {
	case row.State == ssot.ContractRedeemed:
		v.RedeemedAt = &row.RedeemedAt
	case expired(row, c, now):
		v.State = contract.StateExpired
	case row.State == ssot.ContractApproved:
		v.ApprovalToken = contract.ApprovalToken(h.o.Secret, c.ID, row.Digest)
	}
	return v, nil
}

func (h *Handlers) execute(w http.ResponseWriter, r *http.Request) {
	owner := h.admit(w, r)
	if owner == "" {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxExecuteBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		h.api.Error(w, r, task.Errorf(codeTooLarge, "request body exceeds %d bytes", tooLarge.Limit))
		return
	}
	if err != nil {
		h.api.Error(w, r, httpapi.InvalidField("(root)", "unreadable body"))
		return
	}
	// An expired contract answers CONTRACT_EXPIRED whatever else is wrong
	// with the request, so its id is read leniently first.
	var peek struct {
		ContractID string `json:"contractId"`
	}
	now := h.o.Now()
	if json.Unmarshal(body, &peek) == nil && peek.ContractID != "" {
		if row, c, err := h.load(r.Context(), owner, peek.ContractID); err == nil && expired(row, c, now) {
			h.api.Error(w, r, expiredError(row))
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in ExecuteRequest
	if err := h.api.Decode(w, r, &in); err != nil {
		h.api.Error(w, r, err)
		return
	}
	if in.ContractID == "" {
		h.api.Error(w, r, httpapi.InvalidField("contractId", "is required"))
		return
	}
	out, err := h.redeem(r.Context(), owner, in, now)
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// redeem checks contract in.ContractID in the order AMCP gives (expired,
// signature, redeemed, approval) and redeems it once.
func (h *Handlers) redeem(ctx context.Context, owner string, in ExecuteRequest, now time.Time) (ExecuteResponse, error) {
	row, c, err := h.load(ctx, owner, in.ContractID)
	if err != nil {
		return ExecuteResponse{}, err
	}
	if expired(row, c, now) {
		return ExecuteResponse{}, expiredError(row)
	}
	if err := h.verify(row, c); err != nil {
		return ExecuteResponse{}, err
	}
	if row.State == ssot.ContractRedeemed {
		return ExecuteResponse{}, task.Errorf(CodeAlreadyRedeemed, "contract %s was redeemed at %s; a contract executes once", c.ID, stamp(row.RedeemedAt))
	}
	if c.Risk.MinimumHandling.NeedsApproval() {
		if row, err = h.sync(ctx, row, now); err != nil {
			return ExecuteResponse{}, err
		}
		if err := h.chained(ctx, row); err != nil {
			return ExecuteResponse{}, err
		}
		switch {
		case row.State == ssot.ContractRejected:
			return ExecuteResponse{}, task.Errorf(CodeApprovalRequired, "contract %s was rejected by %s at its gate %s", c.ID, row.DecidedBy, row.GateID)
		case row.State != ssot.ContractApproved:
			return ExecuteResponse{}, task.Errorf(CodeApprovalRequired, "contract %s needs %s: its gate %s has not approved it yet", c.ID, c.Risk.MinimumHandling, row.GateID)
		case in.ApprovalToken == "":
			return ExecuteResponse{}, task.Errorf(CodeApprovalRequired, "contract %s needs its approvalToken (GET /v1/contracts/%s shows it once approved)", c.ID, c.ID)
		case !contract.CheckApprovalToken(h.o.Secret, c.ID, row.Digest, in.ApprovalToken):
			return ExecuteResponse{}, task.Errorf(CodeApprovalRequired, "the approvalToken is not the one contract %s's approval issued", c.ID)
		}
	}
	if err := h.o.Store.RedeemContract(ctx, c.ID, row.State, now); err != nil {
		if !errors.Is(err, ssot.ErrContractState) {
			return ExecuteResponse{}, err
		}
		// Another call moved it first: say what it became.
		again, err := h.o.Store.Contract(ctx, c.ID)
		switch {
		case err != nil:
			return ExecuteResponse{}, err
		case again.State == ssot.ContractRedeemed:
			return ExecuteResponse{}, task.Errorf(CodeAlreadyRedeemed, "contract %s was redeemed at %s; a contract executes once", c.ID, stamp(again.RedeemedAt))
		case !now.Before(again.ExpiresAt):
			return ExecuteResponse{}, expiredError(again)
		}
		return ExecuteResponse{}, task.Errorf(task.CodeConflict, "contract %s changed while it was redeemed (now %s); try again", c.ID, again.State)
	}
	b := c.Blueprint
	return ExecuteResponse{
		ContractID: c.ID, Primitive: c.Primitive, Endpoint: b.Endpoint, Method: b.Method, Command: b.Command,
		Parameters: b.Parameters, Values: b.Values, Auth: b.Auth, ContentType: b.ContentType, ExecutedAt: now.UTC(),
	}, nil
}

// load reads contract id; one that does not exist or is another key's is
// CONTRACT_NOT_FOUND alike. Its body is decoded unchecked: verify checks it.
func (h *Handlers) load(ctx context.Context, owner, id string) (ssot.ContractRow, contract.Contract, error) {
	notFound := task.Errorf(CodeNotFound, "no contract %s under this key", id)
	if !strings.HasPrefix(id, contract.IDPrefix) || len(id) > ssot.MaxIDLen {
		return ssot.ContractRow{}, contract.Contract{}, notFound
	}
	row, err := h.o.Store.Contract(ctx, id)
	if errors.Is(err, ssot.ErrNotFound) {
		return ssot.ContractRow{}, contract.Contract{}, notFound
	}
	if err != nil {
		return ssot.ContractRow{}, contract.Contract{}, err
	}
	if row.Owner != owner {
		return ssot.ContractRow{}, contract.Contract{}, notFound
	}
	var c contract.Contract
	_ = json.Unmarshal(row.Body, &c) // a body that does not decode fails verify
	return row, c, nil
}

// verify checks the stored contract's signature and that the row's own
// columns say what the signed body says.
func (h *Handlers) verify(row ssot.ContractRow, c contract.Contract) error {
	ok := c.ID == row.ID && c.Verify(h.o.Secret, row.Signature) && c.Digest() == row.Digest &&
		c.Owner == row.Owner && c.Primitive == row.Primitive && string(c.Risk.MinimumHandling) == row.MinimumHandling &&
		c.ExpiresAt.Equal(row.ExpiresAt)
	if !ok {
		return task.Errorf(CodeInvalid, "contract %s does not verify: its stored record was changed after it was signed", row.ID)
	}
	return nil
}

// sync asks the gate of a contract awaiting approval where it stands and
// records an approval or a rejection.
func (h *Handlers) sync(ctx context.Context, row ssot.ContractRow, now time.Time) (ssot.ContractRow, error) {
	if row.State != ssot.ContractAwaitingApproval || row.GateID == "" || h.o.Gates == nil {
		return row, nil
	}
	st, by, err := h.o.Gates.Status(ctx, row.GateID)
	if err != nil {
		return row, fmt.Errorf("reading gate %s of contract %s: %w", row.GateID, row.ID, err)
	}
	var to string
	switch st {
	case GateApproved:
		to = ssot.ContractApproved
	case GateRejected:
		to = ssot.ContractRejected
	default:
		return row, nil
	}
	if err := h.o.Store.DecideContract(ctx, row.ID, to, by, now); err != nil && !errors.Is(err, ssot.ErrContractState) {
		return row, err
	}
	return h.o.Store.Contract(ctx, row.ID)
}

// chained checks a decided contract's row against the chain of its gate,
// whose outcome alone approves or rejects it (an approvalToken is
// issued, and taken, only when that outcome approved exactly this
// contract): a row changed by hand is CONTRACT_INVALID, naming it.
func (h *Handlers) chained(ctx context.Context, row ssot.ContractRow) error {
	switch row.State {
	case ssot.ContractApproved, ssot.ContractRejected:
	default:
		return nil
	}
	var ch ssot.GateChain
	if row.GateID != "" {
		var err error
		if ch, err = h.o.Store.GateChain(ctx, row.GateID); err != nil {
			return fmt.Errorf("reading the chain of gate %s of contract %s: %w", row.GateID, row.ID, err)
		}
	}
	if err := ch.CheckContract(row); err != nil {
		h.log.Error("a contract's row disagrees with its gate's chain", "contract", row.ID, "gate", row.GateID, "err", err)
		return task.Errorf(CodeInvalid, "contract %s does not verify: %v", row.ID, err)
	}
	return nil
}

// expired reports whether the contract is past its expiry, as its row or
// its signed body says (whichever is earlier): checked before anything
// else, so a tampered expiry never extends a contract.
func expired(row ssot.ContractRow, c contract.Contract, now time.Time) bool {
	return !now.Before(row.ExpiresAt) || (!c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt))
}

func expiredError(row ssot.ContractRow) error {
	return task.Errorf(CodeExpired, "contract %s expired at %s; decide again", row.ID, stamp(row.ExpiresAt))
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
