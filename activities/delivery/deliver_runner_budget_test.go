package delivery

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config/pricing"
)

func TestCapOf(t *testing.T) {
	for _, c := range []struct {
		name   string
		task   float64
		budget ssot.BudgetState
		want   float64
	}{
		{"NoBudget", 3, ssot.BudgetState{}, 3},
		{"BudgetOnly", 0, ssot.BudgetState{Key: "k", LeftUSD: 2}, 2},
		{"BudgetTighter", 3, ssot.BudgetState{Key: "k", LeftUSD: 2}, 2},
		{"TaskTighter", 1, ssot.BudgetState{Key: "k", LeftUSD: 2}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := capOf(c.task, c.budget); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("capOf = %g, want %g", got, c.want)
			}
		})
	}
}

// TestRunnerBudgetCharged: each run's cost is charged to the gate's
// budgets once per usage key, as the role's runner on the repository, and
// a run whose budget is then spent is refused before it starts with the
// max-cost failure naming the budget.
func TestRunnerBudgetCharged(t *testing.T) {
	ctx := context.Background()
	db, err := ssot.Open(ctx, filepath.Join(t.TempDir(), "ampflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	repo := "/repos/app"
	key := ssot.BudgetKey("", repo, "day")
	budgets := &RunnerBudgets{Store: db, Now: func() time.Time { return at },
		Limits: []ssot.BudgetLimit{{Key: key, Project: repo, Period: "day", USD: 1}}}
	d := &Delivery{Budgets: budgets, Pricing: pricing.New(nil, pricing.Price{Input: 1, Output: 1})}
	a := activities.AgentDelivery{Runner: runner.Claude, Model: "claude-sonnet-4-6", Command: []string{"sh", "-c", "touch ran"}}
	m := amp.Message{MsgID: "m1", TaskID: "T-2026-001", To: amp.RoleExecutor}
	st := &runState{d: d, ctx: ctx, a: a, m: m, in: activities.DeliverInput{Message: m, Repo: repo}, repo: repo, totals: map[string]task.UsageInput{}}

	st.report(runner.Outcome{Usage: runner.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: 0.6, CostReported: true}})
	// The same run reported again (its key) counts once.
	st.runs--
	st.report(runner.Outcome{Usage: runner.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: 0.6, CostReported: true}})
	sp, err := db.Spend(ctx, ssot.SpendQuery{Agent: RunnerAgent(amp.RoleExecutor), Project: repo, Period: "day", At: at})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(sp.USD-0.6) > 1e-9 || sp.Signals != 1 {
		t.Fatalf("spend %+v; want $0.6 from one run", sp)
	}
	// With $0.4 left the run is capped at it.
	left, err := budgets.left(ctx, a, amp.RoleExecutor, repo)
	if err != nil || math.Abs(capOf(5, left)-0.4) > 1e-9 {
		t.Fatalf("left %+v, %v; want a $0.4 cap", left, err)
	}
	st.report(runner.Outcome{Usage: runner.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: 0.5, CostReported: true}})

	dir := t.TempDir()
	_, err = st.run(runner.Spec{Runner: a.Runner, Command: a.Command, Dir: dir, Prompt: "go"})
	if _, serr := os.Stat(filepath.Join(dir, "ran")); serr == nil {
		t.Fatal("the runner ran past a spent budget")
	}
	err = d.budgetRefused(a, m, err)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrDelivery || !app.NonRetryable() {
		t.Fatalf("error %v, want a non-retryable %s", err, activities.ErrDelivery)
	}
	var f activities.DeliveryFailure
	if err := app.Details(&f); err != nil {
		t.Fatal(err)
	}
	if f.Class != activities.FailureMaxCost || !strings.Contains(f.Summary, key) {
		t.Errorf("failure %+v; want %s naming %s", f, activities.FailureMaxCost, key)
	}
	// Another repository's runs are not this budget's.
	if left, err := budgets.left(ctx, a, amp.RoleExecutor, "/repos/other"); err != nil || left.Key != "" {
		t.Errorf("other repository: %+v, %v; want no budget", left, err)
	}
}
