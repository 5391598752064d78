package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// Budgets keeps runners' spend where pricing.budgets count it.
type Budgets interface {
	RecordRunnerSpend(ctx context.Context, r ssot.RunnerSpend) (bool, error)
	BudgetLeft(ctx context.Context, limits []ssot.BudgetLimit, at time.Time) (ssot.BudgetState, error)
}

// RunnerBudgets charges runner runs to the action gate's budgets: a run's
// agent is its role's runner identity (Agents, else "runner:<role>"), its
// project the task's repository.
type RunnerBudgets struct {
	Store Budgets
	// Limits are pricing.budgets.
	Limits []ssot.BudgetLimit
	// Agents names a role's runner in the budgets; a role it leaves out
	// is "runner:<role>".
	Agents map[amp.Role]string
	// Now is the budgets' clock; nil means time.Now.
	Now func() time.Time
}

// RunnerAgent is a role's runner identity in the budgets by default.
func RunnerAgent(role amp.Role) string { return "runner:" + string(role) }

func (b *RunnerBudgets) agent(role amp.Role) string {
	if a := b.Agents[role]; a != "" {
		return a
	}
	return RunnerAgent(role)
}

func (b *RunnerBudgets) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// budgetSpent refuses a run: the budget of Key is spent.
type budgetSpent struct {
	State ssot.BudgetState
	Agent string
}

func (e *budgetSpent) Error() string {
	return fmt.Sprintf("budget %s is spent ($%.4f of $%.2f this %s)", e.State.Key, e.State.SpentUSD, e.State.LimitUSD, e.State.Period)
}

// left is what the budgets matching a run leave it: 0 with no budget, a
// *budgetSpent when one is spent.
func (b *RunnerBudgets) left(ctx context.Context, a activities.AgentDelivery, role amp.Role, repo string) (ssot.BudgetState, error) {
	if b == nil || b.Store == nil {
		return ssot.BudgetState{}, nil
	}
	agent := b.agent(role)
	limits := ssot.BudgetsFor(b.Limits, agent, repo)
	if len(limits) == 0 {
		return ssot.BudgetState{}, nil
	}
	st, err := b.Store.BudgetLeft(ctx, limits, b.now())
	if err != nil {
		return ssot.BudgetState{}, fmt.Errorf("reading the budgets of %s: %w", agent, err)
	}
	if st.Over {
		return st, &budgetSpent{State: st, Agent: agent}
	}
	return st, nil
}

// capOf is a run's cap before a session's running total: the least of
// what is left of the task's cap and of its budgets (0 is none).
func capOf(taskLeft float64, budget ssot.BudgetState) float64 {
	if budget.Key == "" || budget.LeftUSD <= 0 {
		return taskLeft
	}
	if taskLeft <= 0 {
		return budget.LeftUSD
	}
	return min(taskLeft, budget.LeftUSD)
}

// charge records what a run cost (usd, the tokens, past a session's
// running total) against the budgets, once per usage key.
func (b *RunnerBudgets) charge(ctx context.Context, log *slog.Logger, a activities.AgentDelivery, m amp.Message, repo string, in task.UsageInput, inTok, outTok int64, usd float64) {
	if b == nil || b.Store == nil || (usd == 0 && inTok == 0 && outTok == 0) {
		return
	}
	r := ssot.RunnerSpend{Key: in.Key, Agent: b.agent(m.To), Project: repo, TaskID: m.TaskID, Runner: a.Runner, Model: a.Model,
		InputTokens: inTok, OutputTokens: outTok, CostUSD: usd, At: b.now()}
	if _, err := b.Store.RecordRunnerSpend(context.WithoutCancel(ctx), r); err != nil {
		log.Warn("runner spend not charged to the budgets", "task_id", m.TaskID, "msg_id", m.MsgID, "key", in.Key, "error", err)
	}
}

// budgetRefused fails a delivery whose run a spent budget refused, as a
// run stopped at its cost cap: the task raises the max-cost decision.
func (d *Delivery) budgetRefused(a activities.AgentDelivery, m amp.Message, err error) error {
	var spent *budgetSpent
	if !errors.As(err, &spent) {
		return nil
	}
	f := activities.DeliveryFailure{Class: activities.FailureMaxCost, Summary: fmt.Sprintf(
		"the %s runner (%s) was not started on %s: gate budget %s of %s is spent ($%.4f of $%.2f this %s); raise it (ampflow gates budgets raise %s, or POST /v1/budgets/%s/raise) or end the task",
		m.To, a.Runner, m.MsgID, spent.State.Key, spent.Agent, spent.State.SpentUSD, spent.State.LimitUSD, spent.State.Period,
		spent.State.Key, spent.State.Key)}
	return temporal.NewNonRetryableApplicationError(f.Summary, activities.ErrDelivery, nil, f)
}
