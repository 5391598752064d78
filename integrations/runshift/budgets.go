package runshift

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// MaxRaiseNote bounds a raise's note, in bytes.
const MaxRaiseNote = 1000

// BudgetView is a budget of pricing.budgets as it stands this period.
type BudgetView struct {
	// Key names the budget in POST /v1/budgets/{key}/raise.
	Key     string `json:"key"`
	Agent   string `json:"agent,omitempty"`
	Project string `json:"project,omitempty"`
	Period  string `json:"period"`
	// PeriodOf is the UTC day (YYYY-MM-DD) or month (YYYY-MM) shown.
	PeriodOf string `json:"period_of"`
	// USD is the configured budget, RaisedUSD what admins added for this
	// period, LimitUSD their sum.
	USD       float64 `json:"usd"`
	RaisedUSD float64 `json:"raised_usd"`
	LimitUSD  float64 `json:"limit_usd"`
	SpentUSD  float64 `json:"spent_usd"`
	Signals   int64   `json:"signals"`
	// State is ok, warn (every signal is gated) or exhausted (signals are
	// refused with 402).
	State string `json:"state"`
}

// BudgetViews lists every budget of pricing.budgets at now.
func (in *Intake) BudgetViews(ctx context.Context, now time.Time) ([]BudgetView, error) {
	out := make([]BudgetView, 0, len(in.Budgets))
	for _, b := range in.Budgets {
		v := BudgetView{Key: BudgetKeyOf(b), Agent: b.Agent, Project: b.Project, Period: b.Period,
			PeriodOf: ssot.PeriodOf(b.Period, now), USD: b.USD}
		sp, err := in.Store.Spend(ctx, ssot.SpendQuery{Agent: b.Agent, Project: b.Project, Period: b.Period, At: now})
		if err != nil {
			return nil, err
		}
		if v.RaisedUSD, err = in.Store.BudgetRaised(ctx, v.Key, v.PeriodOf); err != nil {
			return nil, err
		}
		v.LimitUSD, v.SpentUSD, v.Signals = v.USD+v.RaisedUSD, sp.USD, sp.Signals
		switch {
		case v.SpentUSD >= v.LimitUSD:
			v.State = "exhausted"
		case v.SpentUSD >= BudgetWarn*v.LimitUSD:
			v.State = "warn"
		default:
			v.State = "ok"
		}
		out = append(out, v)
	}
	return out, nil
}

// BudgetList is GET /v1/budgets's answer.
type BudgetList struct {
	Budgets []BudgetView `json:"budgets"`
}

// RaiseRequest is POST /v1/budgets/{key}/raise's body.
type RaiseRequest struct {
	AmountUSD float64 `json:"amount_usd"`
	Note      string  `json:"note"`
}

// RaiseReply is the raise stored and the budget with it.
type RaiseReply struct {
	Raise  ssot.BudgetRaise `json:"raise"`
	Budget BudgetView       `json:"budget"`
}

func (a *API) budgets(w http.ResponseWriter, r *http.Request) {
	list, err := a.Intake.BudgetViews(r.Context(), a.Intake.now())
	if err != nil {
		a.Server.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, BudgetList{Budgets: list})
}

// raise adds to a budget for its current period: the admin's way past a
// spent budget without editing the config.
func (a *API) raise(w http.ResponseWriter, r *http.Request) {
	in, key := a.Intake, r.PathValue("key")
	found := false
	for _, b := range in.Budgets {
		found = found || BudgetKeyOf(b) == key
	}
	if !found {
		a.Server.Error(w, r, task.Errorf(task.CodeNotFound, "budget %s: no such budget in pricing.budgets (GET /v1/budgets lists them)", key))
		return
	}
	var req RaiseRequest
	if err := a.Server.Decode(w, r, &req); err != nil {
		a.Server.Error(w, r, err)
		return
	}
	switch {
	case req.AmountUSD <= 0 || req.AmountUSD > MaxCostUSD:
		a.Server.Error(w, r, httpapi.InvalidField("amount_usd", fmt.Sprintf("must be more than 0 and at most %g", float64(MaxCostUSD))))
		return
	case len(req.Note) > MaxRaiseNote:
		a.Server.Error(w, r, httpapi.InvalidField("note", fmt.Sprintf("is longer than %d bytes", MaxRaiseNote)))
		return
	}
	now := in.now()
	var period string
	for _, b := range in.Budgets {
		if BudgetKeyOf(b) == key {
			period = ssot.PeriodOf(b.Period, now)
		}
	}
	by := httpapi.CallerOf(r).Name
	stored, err := in.Store.RaiseBudget(r.Context(), ssot.BudgetRaise{BudgetKey: key, PeriodOf: period, AmountUSD: req.AmountUSD,
		Note: req.Note, RaisedBy: by, At: now})
	var inv *ssot.InvalidError
	if errors.As(err, &inv) {
		a.Server.Error(w, r, httpapi.InvalidField(inv.Field, inv.Problem))
		return
	}
	if err != nil {
		a.Server.Error(w, r, err)
		return
	}
	in.log().Info("budget raised", "budget", key, "period", period, "amount_usd", req.AmountUSD, "by", by)
	list, err := in.BudgetViews(r.Context(), now)
	if err != nil {
		a.Server.Error(w, r, err)
		return
	}
	out := RaiseReply{Raise: stored}
	for _, v := range list {
		if v.Key == key {
			out.Budget = v
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func budgetsOp() map[string]any {
	return map[string]any{
		"operationId": "getBudgets",
		"summary":     "List pricing.budgets with this period's spend and raises",
		"responses": map[string]any{
			"200": jsonBody(ref("BudgetList"), "OK"),
			"401": errResp("No valid bearer token (code unauthenticated)."),
			"500": errResp("A fault of the server (code internal)."),
		},
	}
}

func raiseOp() map[string]any {
	return map[string]any{
		"operationId": "raiseBudget",
		"summary":     "Raise a budget for its current period (admins)",
		"description": "Adds amount_usd to the budget for the current UTC day or month only: signals refused with 402 " +
			"budget_exceeded are taken again until the raised budget is spent. The raise is stored in the SSOT with who made it and the note.",
		"parameters": []any{map[string]any{"name": "key", "in": "path", "required": true, "schema": map[string]any{"type": "string"},
			"description": "The budget's key as GET /v1/budgets shows it: agent:project:period, * for all (deployer:*:day)."}},
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref("BudgetRaiseRequest")}}},
		"responses": map[string]any{
			"200": jsonBody(ref("BudgetRaiseReply"), "The raise and the budget with it."),
			"400": errResp("Invalid input (code invalid); fields names each field at fault."),
			"401": errResp("No valid bearer token (code unauthenticated)."),
			"403": errResp("The token's role is not admin (code forbidden)."),
			"404": errResp("No budget of pricing.budgets has this key (code not_found)."),
			"500": errResp("A fault of the server (code internal)."),
		},
	}
}

func budgetSchemas(s map[string]any) {
	num := map[string]any{"type": "number", "minimum": 0}
	view := map[string]any{"type": "object", "properties": map[string]any{
		"key": str("agent:project:period, * for all."), "agent": str(""), "project": str(""),
		"period":    map[string]any{"type": "string", "enum": []any{"day", "month"}},
		"period_of": str("The UTC day (YYYY-MM-DD) or month (YYYY-MM)."),
		"usd":       num, "raised_usd": num, "limit_usd": num, "spent_usd": num,
		"signals": map[string]any{"type": "integer", "minimum": 0},
		"state":   map[string]any{"type": "string", "enum": []any{"ok", "warn", "exhausted"}, "description": "warn: every signal is gated (80 %); exhausted: refused with 402."},
	}}
	s["Budget"] = view
	s["BudgetList"] = map[string]any{"type": "object", "required": []any{"budgets"}, "properties": map[string]any{
		"budgets": map[string]any{"type": "array", "items": ref("Budget")}}}
	s["BudgetRaiseRequest"] = map[string]any{"type": "object", "additionalProperties": false, "required": []any{"amount_usd"},
		"properties": map[string]any{
			"amount_usd": map[string]any{"type": "number", "exclusiveMinimum": 0, "maximum": MaxCostUSD, "description": "Added for the current period."},
			"note":       map[string]any{"type": "string", "maxLength": MaxRaiseNote, "description": "Why, for the record."},
		}}
	s["BudgetRaiseReply"] = map[string]any{"type": "object", "properties": map[string]any{
		"raise": map[string]any{"type": "object", "properties": map[string]any{
			"raise_id": str(""), "budget_key": str(""), "period_of": str(""), "amount_usd": num, "note": str(""),
			"raised_by": str("The token's name."), "at": map[string]any{"type": "string", "format": "date-time"}}},
		"budget": ref("Budget"),
	}}
}
