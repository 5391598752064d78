package runshift

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows/gate"
)

// Codes of the API's that the gate's handlers return too.
const (
	codeUnauthenticated task.Code = "unauthenticated"
	codeTooLarge        task.Code = "too_large"
)

// Listing bounds of GET /v1/gates.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// API serves the gate's routes.
type API struct {
	Intake *Intake
	Server *httpapi.Server
}

// Register builds the API of the intake and adds the gate's routes to
// api. The intake is the routes' options: the gate's keys, rules, budgets
// and store, its Logger; the worker runs its recovery too.
func Register(api *httpapi.Server, in *Intake) *API {
	a := &API{Intake: in, Server: api}
	api.Add(spec(), a.Routes()...)
	return a
}

// Routes are the gate's routes with their OpenAPI operations.
func (a *API) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "POST /v1/signals", Open: true, AgentKey: a.isKey, Handler: a.signal, Operation: signalOp("postSignal", "Post an agent's signal (runshift AMP payload)")},
		{Pattern: "POST /amp/signal", Open: true, AgentKey: a.isKey, Handler: a.signal, Operation: signalOp("postAmpSignal", "Post an agent's signal at runshift's path")},
		{Pattern: "GET /v1/signals/{run_id}", Open: true, AgentKey: a.isKey, Handler: a.signalStatus, Operation: signalStatusOp()},
		{Pattern: "GET /v1/gates/{gate_id}", Handler: a.show, Operation: showOp()},
		{Pattern: "GET /v1/gates", Handler: a.list, Operation: listOp()},
		{Pattern: "GET /v1/budgets", Handler: a.budgets, Operation: budgetsOp()},
		{Pattern: "POST /v1/budgets/{key}/raise", Roles: []amp.Role{amp.RoleAdmin}, Handler: a.raise, Operation: raiseOp()},
	}
}

// isKey reports whether an Authorization header holds an agent's key.
func (a *API) isKey(authorization string) bool {
	_, ok := a.Intake.Keys.Check(authorization)
	return ok
}

func (a *API) signal(w http.ResponseWriter, r *http.Request) {
	in := a.Intake
	agent, ok := in.Keys.Check(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ampflow-gate"`)
		a.refuse(w, r, "", nil, task.Errorf(codeUnauthenticated, "a registered agent's key is required: Authorization: Bearer <key> (gate.agents)"))
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		a.refuse(w, r, agent.ID, raw, task.Errorf(codeTooLarge, "request body exceeds %d bytes", MaxBody))
		return
	case err != nil:
		a.refuse(w, r, agent.ID, raw, httpapi.InvalidField(amp.RootPath, fmt.Sprintf("unreadable body: %v", err)))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	var s Signal
	if err := a.Server.Decode(w, r, &s); err != nil {
		a.refuse(w, r, agent.ID, raw, err)
		return
	}
	if fs := s.Validate(in.Allowed); len(fs) > 0 {
		a.refuse(w, r, agent.ID, raw, &task.Error{Code: task.CodeInvalid, Message: "invalid signal: " + fs[0].String(), Fields: fs})
		return
	}
	rep, err := in.Accept(r.Context(), agent, s)
	if err != nil {
		a.refuse(w, r, agent.ID, raw, err)
		return
	}
	httpapi.WriteJSON(w, rep.HTTPStatus(), rep)
}

// refuse answers a refused signal. A refusal of the signal itself (not a
// fault of the server) is logged and kept in the SSOT error log, with the
// body when the sender's key was valid; nothing else changes.
func (a *API) refuse(w http.ResponseWriter, r *http.Request, agent string, raw []byte, err error) {
	in := a.Intake
	var te *task.Error
	if errors.As(err, &te) && te.Code != task.CodeUnavailable && te.Code != task.CodeInternal {
		outcome := "invalid"
		switch te.Code {
		case codeUnauthenticated:
			outcome = "unauthenticated"
		case CodeBudgetExceeded:
			outcome = "" // counted where it is decided
		case task.CodeForbidden, task.CodeConflict:
			outcome = string(te.Code)
		}
		if outcome != "" {
			in.Metrics.signal(agent, outcome)
		}
		in.log().Info("signal refused", "agent", agent, "remote", r.RemoteAddr, "code", te.Code, "reason", te.Message)
		if es, ok := in.Store.(ErrorLog); ok {
			e := ssot.ErrorEntry{RecordedAt: in.now(), Source: "signal",
				Reason: fmt.Sprintf("%s %s: %s: %s (agent %q, from %s)", r.Method, r.URL.Path, te.Code, te.Message, agent, r.RemoteAddr)}
			if agent != "" {
				e.Raw = string(raw)
			}
			if err := es.AppendError(context.WithoutCancel(r.Context()), e); err != nil {
				in.log().Error("keeping a refused signal in the SSOT error log", "err", err)
			}
		}
	}
	a.Server.Error(w, r, err)
}

// ErrorLog keeps refused input (*ssot.DB).
type ErrorLog interface {
	AppendError(ctx context.Context, e ssot.ErrorEntry) error
}

// signalStatus answers an agent, by its key, where its run's gate stands:
// what posting the signal again would answer, without posting it.
func (a *API) signalStatus(w http.ResponseWriter, r *http.Request) {
	agent, ok := a.Intake.Keys.Check(r.Header.Get("Authorization"))
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ampflow-gate"`)
		a.Server.Error(w, r, task.Errorf(codeUnauthenticated, "a registered agent's key is required: Authorization: Bearer <key> (gate.agents)"))
		return
	}
	run := r.PathValue("run_id")
	g, found, err := a.Intake.Store.GateByRun(r.Context(), agent.ID, run)
	if err != nil {
		a.Server.Error(w, r, err)
		return
	}
	// Another agent's run is not found: a key learns nothing of others.
	if !found {
		a.Server.Error(w, r, task.Errorf(task.CodeNotFound, "run_id: no signal of agent %s has run_id %q", agent.ID, run))
		return
	}
	st := gate.Status(g.Status)
	httpapi.WriteJSON(w, http.StatusOK, Reply{Status: st, GateID: g.GateID, Message: messageOf(st, g.Gated)})
}

// View is a gate as the API shows it.
type View struct {
	GateID         string             `json:"gate_id"`
	Kind           gate.Kind          `json:"kind"`
	Status         gate.Status        `json:"status"`
	Gated          bool               `json:"gated"`
	RunID          string             `json:"run_id,omitempty"`
	AgentID        string             `json:"agent_id"`
	ProjectID      string             `json:"project_id,omitempty"`
	TaskID         string             `json:"task_id,omitempty"`
	Summary        string             `json:"summary,omitempty"`
	ProposedAction string             `json:"proposed_action,omitempty"`
	Cost           gate.Cost          `json:"cost"`
	CostUSD        float64            `json:"cost_usd"`
	Reasons        []string           `json:"reasons,omitempty"`
	Contract       *gate.ContractRef  `json:"contract,omitempty"`
	ReceivedAt     time.Time          `json:"received_at"`
	ResolvedAt     *time.Time         `json:"resolved_at,omitempty"`
	ResolvedBy     string             `json:"resolved_by,omitempty"`
	Callback       string             `json:"callback"`
	Attempts       []ssot.GateAttempt `json:"callback_attempts,omitempty"`
	// Artifacts are the signal's artifacts (at most MaxArtifacts, each
	// at most MaxArtifactBytes); GET /v1/gates/{gate_id} only.
	Artifacts []json.RawMessage `json:"artifacts,omitempty"`
	// History is the agent's MaxHistory latest other signals; GET
	// /v1/gates/{gate_id} only.
	History []HistoryItem `json:"agent_history,omitempty"`
}

// MaxHistory bounds the agent's history shown with a gate.
const MaxHistory = 10

// HistoryItem is one of an agent's signals, as the history of a gate
// shows it.
type HistoryItem struct {
	GateID         string      `json:"gate_id"`
	RunID          string      `json:"run_id,omitempty"`
	Status         gate.Status `json:"status"`
	Gated          bool        `json:"gated"`
	CostUSD        float64     `json:"cost_usd"`
	ReceivedAt     time.Time   `json:"received_at"`
	ProposedAction string      `json:"proposed_action,omitempty"`
}

// agentHistory is the agent's latest signals but g.
func (a *API) agentHistory(ctx context.Context, g ssot.GateRow) ([]HistoryItem, error) {
	rows, _, err := a.Intake.Store.GateList(ctx, ssot.GateFilter{Agent: g.AgentID}, ssot.Page{Limit: MaxHistory + 1})
	if err != nil {
		return nil, err
	}
	out := []HistoryItem{}
	for _, r := range rows {
		if r.GateID == g.GateID || len(out) == MaxHistory {
			continue
		}
		v := ViewOf(r)
		out = append(out, HistoryItem{GateID: r.GateID, RunID: r.RunID, Status: v.Status, Gated: r.Gated, CostUSD: r.CostUSD,
			ReceivedAt: r.ReceivedAt, ProposedAction: clipRunes(v.ProposedAction, 200)})
	}
	return out, nil
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// ViewOf builds the view of a stored gate.
func ViewOf(g ssot.GateRow) View {
	v := View{GateID: g.GateID, Kind: gate.Kind(g.Kind), Status: gate.Status(g.Status), Gated: g.Gated, RunID: g.RunID,
		AgentID: g.AgentID, ProjectID: g.ProjectID, TaskID: g.TaskID, CostUSD: g.CostUSD, Reasons: g.Reasons,
		ReceivedAt: g.ReceivedAt, ResolvedBy: g.ResolvedBy, Callback: g.Callback,
		Cost: gate.Cost{Model: g.Model, InputTokens: g.InputTokens, OutputTokens: g.OutputTokens, ReportedUSD: g.ReportedUSD, Mismatch: g.Mismatch}}
	if !g.ResolvedAt.IsZero() {
		t := g.ResolvedAt
		v.ResolvedAt = &t
	}
	var body struct {
		Gate gate.Input `json:"gate"`
	}
	if json.Unmarshal(g.Body, &body) == nil {
		v.Summary, v.ProposedAction, v.Contract = body.Gate.Summary, body.Gate.ProposedAction, body.Gate.Contract
		v.Cost = body.Gate.Cost
	}
	return v
}

func (a *API) show(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("gate_id")
	g, err := a.Intake.Store.Gate(r.Context(), id)
	if errors.Is(err, ssot.ErrNotFound) {
		a.Server.Error(w, r, task.Errorf(task.CodeNotFound, "gate %s not found", id))
		return
	}
	if err != nil {
		a.Server.Error(w, r, err)
		return
	}
	v := ViewOf(g)
	if v.Attempts, err = a.Intake.Store.GateAttempts(r.Context(), id); err != nil {
		a.Server.Error(w, r, err)
		return
	}
	var body struct {
		Gate gate.Input `json:"gate"`
	}
	if json.Unmarshal(g.Body, &body) == nil {
		v.Artifacts = body.Gate.Artifacts
	}
	if v.History, err = a.agentHistory(r.Context(), g); err != nil {
		a.Server.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
}

// List is a page of gates.
type List struct {
	Gates      []View `json:"gates"`
	NextCursor string `json:"next_cursor,omitempty"`
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "agent", "project", "status", "run_id", "limit", "cursor":
		default:
			a.Server.Error(w, r, httpapi.InvalidField(k, "unknown query parameter"))
			return
		}
	}
	f := ssot.GateFilter{Agent: q.Get("agent"), Project: q.Get("project"), Status: q.Get("status"), RunID: q.Get("run_id")}
	switch f.Status {
	case "", string(gate.StatusPending), string(gate.StatusApproved), string(gate.StatusRejected):
	default:
		a.Server.Error(w, r, httpapi.InvalidField("status", fmt.Sprintf("must be pending, approved or rejected, not %q", f.Status)))
		return
	}
	limit := DefaultListLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxListLimit {
			a.Server.Error(w, r, httpapi.InvalidField("limit", fmt.Sprintf("must be 1 to %d, not %q", MaxListLimit, s)))
			return
		}
		limit = n
	}
	rows, next, err := a.Intake.Store.GateList(r.Context(), f, ssot.Page{Limit: limit, Cursor: q.Get("cursor")})
	var inv *ssot.InvalidError
	if errors.As(err, &inv) {
		a.Server.Error(w, r, httpapi.InvalidField(inv.Field, inv.Problem))
		return
	}
	if err != nil {
		a.Server.Error(w, r, err)
		return
	}
	out := List{Gates: make([]View, 0, len(rows)), NextCursor: next}
	for _, g := range rows {
		out.Gates = append(out.Gates, ViewOf(g))
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}
