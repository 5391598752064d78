package runshift

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/config/pricing"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows/gate"
)

// Error codes of the gate's API.
const (
	// CodeBudgetExceeded: a budget the signal counts against is spent.
	CodeBudgetExceeded task.Code = "budget_exceeded"
)

// BudgetWarn is the share of a budget from which every signal is gated.
const BudgetWarn = 0.8

// GateLedger is what the intake needs of the SSOT (*ssot.DB): the gates,
// their attempts and the budgets they spend.
type GateLedger interface {
	RecordGate(ctx context.Context, g ssot.GateRow, subject string, entries []ssot.Entry, limits []ssot.BudgetLimit) (ssot.GateRow, bool, error)
	GateByRun(ctx context.Context, agentID, runID string) (ssot.GateRow, bool, error)
	Gate(ctx context.Context, gateID string) (ssot.GateRow, error)
	GateList(ctx context.Context, f ssot.GateFilter, p ssot.Page) ([]ssot.GateRow, string, error)
	GateAttempts(ctx context.Context, gateID string) ([]ssot.GateAttempt, error)
	Spend(ctx context.Context, q ssot.SpendQuery) (ssot.Spend, error)
	RaiseBudget(ctx context.Context, r ssot.BudgetRaise) (ssot.BudgetRaise, error)
	BudgetRaised(ctx context.Context, key, periodOf string) (float64, error)
	StaleGates(ctx context.Context, before time.Time, after ssot.GateRow, limit int) ([]ssot.GateRow, error)
	TaskCharged(ctx context.Context, gateID string) error
}

var _ GateLedger = (*ssot.DB)(nil)

// Starter starts a gate workflow idempotently (gate.Start on a client).
type Starter func(ctx context.Context, in gate.Input) (gate.Started, error)

// Intake takes signals: it checks them, records them, applies the rules
// and budgets and opens the gates.
type Intake struct {
	Store   GateLedger
	Start   Starter
	Keys    Keys
	Rules   Rules
	Pricing Pricing
	Budgets []pricing.Budget
	// Allowed checks webhook hosts (gate.webhook_allow).
	Allowed     AllowFunc
	CallbackFor time.Duration
	// TaskBudgets, when set, charges signals that name a task_id to the
	// task's budget_usd.
	TaskBudgets *TaskBudgets
	Logger      *slog.Logger
	Now         func() time.Time
	Metrics     *Metrics
}

// Reply is the answer to a signal, runshift's relay response.
type Reply struct {
	Status  gate.Status `json:"status"`
	GateID  string      `json:"gate_id"`
	Message string      `json:"message"`
	// Duplicate says the run_id was posted before: nothing was recorded,
	// notified or called back again.
	Duplicate bool `json:"duplicate,omitempty"`
}

// HTTPStatus is 202 for a pending gate, 200 otherwise.
func (r Reply) HTTPStatus() int {
	if r.Status == gate.StatusPending {
		return http.StatusAccepted
	}
	return http.StatusOK
}

// GateID is the gate id of an agent's run: the same run always names
// the same gate, so a retried start cannot open a second one, and one
// agent's run id never names another agent's gate.
func GateID(agentID, runID string) string {
	sum := sha256.Sum256([]byte("run:" + agentID + "\x00" + runID))
	return "gate_" + hex.EncodeToString(sum[:13])
}

// SignalHash is the hex SHA-256 of a signal's canonical JSON (keys
// sorted, no spaces) without started_at, completed_at and webhook_url:
// two posts of a run are the same signal when they report the same work
// and propose the same action, whenever and wherever the agent wants to
// hear back (an agent that runs again sends new times and may listen
// elsewhere).
func SignalHash(s Signal) (string, error) {
	s.StartedAt, s.CompletedAt, s.WebhookURL = "", "", nil
	raw, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	if raw, err = json.Marshal(v); err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

func messageOf(s gate.Status, gated bool) string {
	switch {
	case s == gate.StatusPending:
		return "Awaiting operator approval"
	case s == gate.StatusApproved && !gated:
		return "No gate: approved"
	case s == gate.StatusApproved:
		return "Gate approved by operator"
	}
	return "Gate rejected by operator"
}

// Accept takes a valid signal from agent.
func (in *Intake) Accept(ctx context.Context, agent Agent, s Signal) (Reply, error) {
	if s.AgentID != agent.ID {
		return Reply{}, httpapi.FieldError(task.CodeForbidden, "agent_id", fmt.Sprintf("%q is not the agent of this key", s.AgentID))
	}
	if !agent.MayPost(s.ProjectID) {
		return Reply{}, httpapi.FieldError(task.CodeForbidden, "project_id", fmt.Sprintf("agent %s may not post for project %q", agent.ID, s.ProjectID))
	}
	hash, err := SignalHash(s)
	if err != nil {
		return Reply{}, fmt.Errorf("hashing signal %s: %w", s.RunID, err)
	}
	// A run posted before answers as it stands, whatever the budgets say
	// now.
	if prev, ok, err := in.Store.GateByRun(ctx, agent.ID, s.RunID); err != nil {
		return Reply{}, err
	} else if ok {
		return in.duplicate(ctx, agent, prev, hash)
	}
	if s.TaskID != "" && in.TaskBudgets != nil {
		if err := in.TaskBudgets.Bound(ctx, s.TaskID, agent.ID); err != nil {
			return Reply{}, err
		}
	}
	now := in.now()
	computed, priced := in.Pricing.Cost(s.Model, *s.InputTokens, *s.OutputTokens)
	cost := gate.Cost{Model: s.Model, InputTokens: *s.InputTokens, OutputTokens: *s.OutputTokens, ReportedUSD: *s.CostUSD, ComputedUSD: computed}
	counted := max(cost.ReportedUSD, computed) // a model not priced costs the default price at least
	if priced {
		counted = computed
		cost.Mismatch = Mismatch(cost.ReportedUSD, computed)
	}
	var reasons []string
	declared := *s.GateRequired
	if declared {
		reasons = append(reasons, "the agent declared gate_required")
	}
	rule, idx := in.Rules.Match(Facts{Agent: s.AgentID, Project: s.ProjectID, Model: s.Model, Status: s.Status, CostUSD: counted, Action: s.Action()})
	gated := Gated(rule, declared)
	if idx >= 0 {
		reasons = append(reasons, fmt.Sprintf("gate.rules[%d]: %s", idx, rule))
	}
	if cost.Mismatch {
		reasons = append(reasons, fmt.Sprintf("reported cost $%.6f differs from the computed $%.6f by more than %d%%", cost.ReportedUSD, computed, int(MismatchRatio*100)))
	}
	id := GateID(agent.ID, s.RunID)
	limits := in.limits(s)
	var (
		gin    gate.Input
		row    ssot.GateRow
		stored ssot.GateRow
		wrote  bool
	)
	// The budgets are checked where the signal is recorded, in one
	// transaction: a signal that reaches BudgetWarn of a budget is gated
	// and recorded again, one that finds a budget spent is refused.
	for try := 0; ; try++ {
		gin = gate.Input{
			GateID: id, Kind: gate.KindSignal, RunID: s.RunID, AgentID: s.AgentID, ProjectID: s.ProjectID,
			Summary: s.Summary, ProposedAction: s.Action(), Artifacts: s.Artifacts, Cost: cost, Reasons: reasons,
			ReceivedAt: now, CallbackFor: in.CallbackFor,
		}
		if gated {
			gin.WebhookURL = s.Webhook()
			gin.History = in.history(ctx, s.AgentID)
		}
		// Gated is in the chain: an ungated signal's approval is read
		// from there (ssot.GateChain).
		body, err := json.Marshal(struct {
			Signal Signal     `json:"signal"`
			Gate   gate.Input `json:"gate"`
			Gated  bool       `json:"gated"`
		}{s, gin, gated})
		if err != nil {
			return Reply{}, fmt.Errorf("encoding signal %s: %w", s.RunID, err)
		}
		row = ssot.GateRow{
			GateID: id, Kind: string(gate.KindSignal), RunID: s.RunID, AgentID: s.AgentID, ProjectID: s.ProjectID, TaskID: s.TaskID,
			Gated: gated, Status: string(gate.StatusApproved), Model: s.Model, InputTokens: cost.InputTokens, OutputTokens: cost.OutputTokens,
			ReportedUSD: cost.ReportedUSD, CostUSD: counted, Mismatch: cost.Mismatch, ReceivedAt: now, Reasons: reasons, Body: body,
			SignalHash: hash, TaskCharge: s.TaskID != "" && in.TaskBudgets != nil,
		}
		if gated {
			row.Status = string(gate.StatusPending)
			if gin.WebhookURL != "" {
				row.Callback = gate.CallbackWaiting
			}
		}
		// The audit first: the signal is in the SSOT, its row and its
		// record in the gate's chain in one transaction, before any gate
		// fires.
		stored, wrote, err = in.Store.RecordGate(ctx, row, gate.WorkflowID(id),
			[]ssot.Entry{{ID: id + "-signal", Kind: "signal", RecordedAt: now, Body: body}}, limits)
		var be *ssot.BudgetError
		switch {
		case errors.As(err, &be) && be.Over:
			in.Metrics.signal(agent.ID, "budget_exceeded")
			name := in.budgetName(be.Key)
			return Reply{}, task.Errorf(CodeBudgetExceeded, "%s: $%.4f of $%.2f spent this %s; an admin raises it (POST /v1/budgets/%s/raise, ampflow gates budgets raise), or wait for the next %s",
				name, be.SpentUSD, be.LimitUSD, be.Period, be.Key, be.Period)
		case errors.As(err, &be) && !gated && try == 0:
			gated = true
			reasons = append(reasons, fmt.Sprintf("%s: $%.4f of $%.2f this %s (%.0f%%)", in.budgetName(be.Key),
				be.SpentUSD+be.CostUSD, be.LimitUSD, be.Period, 100*(be.SpentUSD+be.CostUSD)/be.LimitUSD))
			continue
		case err != nil:
			return Reply{}, err
		}
		break
	}
	if !wrote { // a concurrent post of the same run won
		return in.duplicate(ctx, agent, stored, hash)
	}
	in.Metrics.signal(agent.ID, row.Status)
	in.Metrics.spend(agent.ID, s.ProjectID, cost, counted)
	in.charge(ctx, row)
	if gated {
		if _, err := in.Start(ctx, gin); err != nil {
			return Reply{}, &task.Error{Code: task.CodeUnavailable, Message: "opening gate " + id + ": the workflow service did not answer; post the signal again", Err: err}
		}
		in.Metrics.gate()
	}
	in.log().Info("signal", "agent", agent.ID, "run", s.RunID, "gate", id, "gated", gated, "cost_usd", counted)
	st := gate.Status(row.Status)
	return Reply{Status: st, GateID: id, Message: messageOf(st, gated)}, nil
}

// charge charges a recorded signal's cost to its task, and records that
// it did; a failure is the task's, logged, and the recovery sweep tries
// again (Recover). It reports whether the charge is done.
func (in *Intake) charge(ctx context.Context, row ssot.GateRow) bool {
	if !row.TaskCharge || in.TaskBudgets == nil {
		return false
	}
	if err := in.TaskBudgets.Charge(ctx, row); err != nil {
		in.log().Error("charging a task's budget", "task", row.TaskID, "run", row.RunID, "err", err)
		return false
	}
	if err := in.Store.TaskCharged(ctx, row.GateID); err != nil {
		in.log().Error("recording a task's charge", "task", row.TaskID, "gate", row.GateID, "err", err)
		return false
	}
	return true
}

// duplicate answers a run posted before with its gate as it stands; the
// same run with another body is a conflict. A gate that was recorded but
// not started (the workflow service was away) is started now; a start of
// a started gate changes nothing.
func (in *Intake) duplicate(ctx context.Context, agent Agent, prev ssot.GateRow, hash string) (Reply, error) {
	if prev.SignalHash != "" && prev.SignalHash != hash {
		return Reply{}, httpapi.FieldError(task.CodeConflict, "run_id", fmt.Sprintf("%q was posted before with another body (gate %s, %s); a new action needs a new run_id",
			prev.RunID, prev.GateID, prev.Status))
	}
	in.Metrics.signal(agent.ID, "duplicate")
	st := gate.Status(prev.Status)
	if prev.Gated && st == gate.StatusPending {
		if err := in.restart(ctx, prev); err != nil {
			return Reply{}, err
		}
	}
	return Reply{Status: st, GateID: prev.GateID, Message: messageOf(st, prev.Gated), Duplicate: true}, nil
}

// restart starts a pending gate's workflow, if it is not started.
func (in *Intake) restart(ctx context.Context, prev ssot.GateRow) error {
	var body struct {
		Gate gate.Input `json:"gate"`
	}
	if err := json.Unmarshal(prev.Body, &body); err != nil || body.Gate.GateID == "" {
		return nil
	}
	if _, err := in.Start(ctx, body.Gate); err != nil {
		return &task.Error{Code: task.CodeUnavailable, Message: "opening gate " + prev.GateID + ": the workflow service did not answer; post the signal again", Err: err}
	}
	return nil
}

// limits are the budgets s counts against, as the store checks them.
func (in *Intake) limits(s Signal) []ssot.BudgetLimit {
	var out []ssot.BudgetLimit
	for _, b := range in.Budgets {
		if (b.Agent != "" && b.Agent != s.AgentID) || (b.Project != "" && b.Project != s.ProjectID) {
			continue
		}
		out = append(out, ssot.BudgetLimit{Key: BudgetKeyOf(b), Agent: b.Agent, Project: b.Project, Period: b.Period, USD: b.USD, Warn: BudgetWarn})
	}
	return out
}

// BudgetKeyOf names a budget in the API: agent:project:period, "*" for
// an agent or project it does not narrow ("deployer:*:day").
func BudgetKeyOf(b pricing.Budget) string {
	return ssot.BudgetKey(b.Agent, b.Project, b.Period)
}

func (in *Intake) budgetName(key string) string {
	for i, b := range in.Budgets {
		if BudgetKeyOf(b) == key {
			return budgetName(i, b)
		}
	}
	return "budget " + key
}

func budgetName(i int, b pricing.Budget) string {
	who := ""
	switch {
	case b.Agent != "" && b.Project != "":
		who = "agent " + b.Agent + " in project " + b.Project
	case b.Agent != "":
		who = "agent " + b.Agent
	default:
		who = "project " + b.Project
	}
	return fmt.Sprintf("pricing.budgets[%d] (%s, per %s)", i, who, b.Period)
}

// history sums up the agent's last signals for the admins.
func (in *Intake) history(ctx context.Context, agent string) []string {
	rows, _, err := in.Store.GateList(ctx, ssot.GateFilter{Agent: agent}, ssot.Page{Limit: 5})
	if err != nil {
		in.log().Warn("reading the agent's history", "agent", agent, "err", err)
		return nil
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %s: %s ($%.4f)", r.ReceivedAt.UTC().Format(time.RFC3339), r.RunID, r.Status, r.CostUSD))
	}
	return out
}

func (in *Intake) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

func (in *Intake) log() *slog.Logger {
	if in.Logger != nil {
		return in.Logger
	}
	return slog.Default()
}

// NewIntake builds the intake of cfg and p: keys read through lookup,
// rules compiled, pricing merged, counters registered on reg (nil: none).
func NewIntake(cfg config.Gate, p config.Pricing, store GateLedger, start Starter, lookup func(string) (string, bool), reg prometheus.Registerer) (*Intake, error) {
	keys, err := NewKeys(cfg.Agents, lookup)
	if err != nil {
		return nil, err
	}
	rules, err := CompileRules(cfg.Rules)
	if err != nil {
		return nil, err
	}
	return &Intake{
		Store: store, Start: start, Keys: keys, Rules: rules, Pricing: NewPricing(p.Models),
		Budgets: p.Budgets, Allowed: Allow(cfg.WebhookAllow), CallbackFor: cfg.CallbackFor,
		Metrics: NewMetrics(reg).ForProjects(ConfiguredProjects(cfg, p)),
	}, nil
}

// ConfiguredProjects are the projects cfg and p name: in an agent's
// projects (but "*") or a budget.
func ConfiguredProjects(cfg config.Gate, p config.Pricing) []string {
	var out []string
	for _, a := range cfg.Agents {
		for _, p := range a.Projects {
			if p != "*" && p != "" {
				out = append(out, p)
			}
		}
	}
	for _, b := range p.Budgets {
		if b.Project != "" {
			out = append(out, b.Project)
		}
	}
	return out
}
