package ssot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// KindRunner is the kind of a gates row that holds what one run of a
// runner-mode agent cost: the budgets' Spend counts it beside the
// signals, so runners and gated agents share pricing.budgets.
const KindRunner = "runner"

// BudgetKey names a budget of pricing.budgets: agent:project:period, "*" for
// an agent or project it does not narrow ("deployer:*:day").
func BudgetKey(agent, project, period string) string {
	star := func(s string) string {
		if s == "" {
			return "*"
		}
		return s
	}
	return star(agent) + ":" + star(project) + ":" + period
}

// BudgetsFor keeps the limits whose agent and project match (an empty
// one matches every agent or project).
func BudgetsFor(limits []BudgetLimit, agent, project string) []BudgetLimit {
	var out []BudgetLimit
	for _, l := range limits {
		if (l.Agent != "" && l.Agent != agent) || (l.Project != "" && l.Project != project) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// BudgetState is where the tightest of some budgets stands.
type BudgetState struct {
	// Key names the budget with the least left; empty when no budget
	// was asked about.
	Key    string
	Period string
	// SpentUSD is its spend this period, LimitUSD the budget with the
	// period's raises, LeftUSD what is left (never below 0).
	SpentUSD, LimitUSD, LeftUSD float64
	// Over says it is spent.
	Over bool
}

// budgetIn reads one budget's spend and limit at at.
func (s *DB) budgetIn(ctx context.Context, q interface {
	rowQuerier
	querier
}, l BudgetLimit, at time.Time) (spent, limit float64, err error) {
	sp, err := spendIn(ctx, q, s, SpendQuery{Agent: l.Agent, Project: l.Project, Period: l.Period, At: at})
	if err != nil {
		return 0, 0, err
	}
	raised, err := s.raisedIn(ctx, q, l.Key, PeriodOf(l.Period, at))
	if err != nil {
		return 0, 0, err
	}
	return sp.USD, l.USD + raised, nil
}

// BudgetLeft says where the tightest of limits stands at at: the one
// spent, else the one with the least left. The same arithmetic as the
// check RecordGate makes.
func (s *DB) BudgetLeft(ctx context.Context, limits []BudgetLimit, at time.Time) (BudgetState, error) {
	var best BudgetState
	for _, l := range sortedLimits(limits) {
		spent, limit, err := s.budgetIn(ctx, s.db, l, at)
		if err != nil {
			return BudgetState{}, err
		}
		st := BudgetState{Key: l.Key, Period: l.Period, SpentUSD: spent, LimitUSD: limit, LeftUSD: max(limit-spent, 0), Over: spent >= limit}
		if st.Over {
			return st, nil
		}
		if best.Key == "" || st.LeftUSD < best.LeftUSD {
			best = st
		}
	}
	return best, nil
}

// RunnerSpend is what one run of a runner-mode agent cost.
type RunnerSpend struct {
	// Key names the run (the usage key its task was sent): a run
	// recorded again counts once.
	Key string `json:"key"`
	// Agent is the runner's identity in the budgets ("runner:executor"),
	// Project the task's repository.
	Agent   string `json:"agent_id"`
	Project string `json:"project_id,omitempty"`
	// TaskID is kept in the row's body only: the task counts its
	// runners' cost itself, so the gates' task spend leaves it out.
	TaskID       string    `json:"task_id,omitempty"`
	Runner       string    `json:"runner,omitempty"`
	Model        string    `json:"model,omitempty"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	CostUSD      float64   `json:"cost_usd"`
	At           time.Time `json:"at"`
}

// RunnerSpendID is the gate id of a run's spend row.
func RunnerSpendID(key string) string {
	h := sha256.Sum256([]byte(key))
	return "run_" + hex.EncodeToString(h[:16])
}

// RecordRunnerSpend stores a run's spend as a gates row of KindRunner,
// once per key; it says whether this call wrote it.
func (s *DB) RecordRunnerSpend(ctx context.Context, r RunnerSpend) (bool, error) {
	if err := checkID("key", r.Key); err != nil {
		return false, err
	}
	if r.At.IsZero() {
		r.At = time.Now()
	}
	body, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	g := GateRow{GateID: RunnerSpendID(r.Key), Kind: KindRunner, AgentID: r.Agent, ProjectID: r.Project,
		Status: "approved", Model: r.Model, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		ReportedUSD: r.CostUSD, CostUSD: r.CostUSD, ReceivedAt: r.At, Body: body}
	_, wrote, err := s.RecordGate(ctx, g, "", nil, nil)
	if err != nil {
		return false, fmt.Errorf("recording the spend of run %s: %w", r.Key, err)
	}
	return wrote, nil
}
