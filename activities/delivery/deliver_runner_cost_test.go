package delivery

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config/pricing"
)

func TestRunCap(t *testing.T) {
	for _, c := range []struct {
		name  string
		left  float64
		prior task.UsageInput
		want  float64
	}{
		{"NoCap", 0, task.UsageInput{SessionTotal: true, CostUSD: 2}, 0},
		{"Left", 3, task.UsageInput{}, 3},
		{"PerRunSessionIgnoresPrior", 3, task.UsageInput{CostUSD: 2}, 3},
		{"SessionTotalAddsPrior", 3, task.UsageInput{SessionTotal: true, CostUSD: 2}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := runCap(c.left, c.prior); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("runCap = %g, want %g", got, c.want)
			}
		})
	}
}

type usageLog struct{ got []task.UsageInput }

func (u *usageLog) RecordUsage(_ context.Context, _ string, in task.UsageInput) error {
	u.got = append(u.got, in)
	return nil
}

type countLog struct{ usd float64 }

func (c *countLog) CountRunnerUsage(_ string, _ amp.Role, _, _ int64, usd float64) { c.usd += usd }

// TestReportPricesAndKeys: a run with no dollars is priced from the
// table (the default price for an unknown model), each run gets its own
// key, and the metrics count a session total's difference only.
func TestReportPricesAndKeys(t *testing.T) {
	log, count := &usageLog{}, &countLog{}
	d := &Delivery{Usage: log, Metrics: count, Pricing: pricing.New(nil, pricing.Price{Input: 10, Output: 20})}
	st := &runState{d: d, ctx: t.Context(), a: activities.AgentDelivery{Runner: runner.Codex, Model: "no-such-model"},
		m: amp.Message{MsgID: "m1", TaskID: "T-2026-001", To: amp.RoleExecutor}, totals: map[string]task.UsageInput{}}
	st.report(runner.Outcome{SessionID: "s", Usage: runner.Usage{InputTokens: 1e6, OutputTokens: 1e6, SessionTotal: true}})
	st.report(runner.Outcome{SessionID: "s", Usage: runner.Usage{InputTokens: 2e6, OutputTokens: 1e6, SessionTotal: true}})
	st.report(runner.Outcome{SessionID: "s"}) // nothing used: nothing sent
	if len(log.got) != 2 {
		t.Fatalf("%d usage signals, want 2: %+v", len(log.got), log.got)
	}
	if log.got[0].Key == log.got[1].Key {
		t.Errorf("two runs share the key %q", log.got[0].Key)
	}
	if log.got[0].CostUSD != 30 || log.got[1].CostUSD != 40 || !log.got[1].SessionTotal {
		t.Errorf("priced %+v, want $30 then the session's total $40", log.got)
	}
	if count.usd != 40 {
		t.Errorf("metrics counted $%g, want $40 (30, then the 10 the session added)", count.usd)
	}
}

func TestRunFailedClasses(t *testing.T) {
	d := &Delivery{}
	a := activities.AgentDelivery{Runner: runner.Claude, Env: []string{"PATH", "ANTHROPIC_API_KEY"}}
	in := activities.DeliverInput{Message: amp.Message{MsgID: "m1", TaskID: "T-2026-001", To: amp.RoleReviewer}}
	reset := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, typ, class, says string
		out                    runner.Outcome
	}{
		{"RateLimit", activities.ErrRateLimited, "rate_limit", "rate limit",
			runner.Outcome{Reason: runner.ReasonExited, ExitCode: 1, Failure: &runner.Failure{Class: runner.FailureRateLimit, Message: "429", ResetAt: reset}}},
		{"Auth", activities.ErrDelivery, "auth", "fix the key in ANTHROPIC_API_KEY (agents.reviewer.env)",
			runner.Outcome{Reason: runner.ReasonExited, ExitCode: 1, Failure: &runner.Failure{Class: runner.FailureAuth, Message: "invalid x-api-key"}}},
		{"MaxCost", activities.ErrDelivery, activities.FailureMaxCost, "cost cap",
			runner.Outcome{Reason: runner.ReasonMaxCost, Usage: runner.Usage{CostUSD: 1.5}}},
		{"ClaudeBudget", activities.ErrDelivery, activities.FailureMaxCost, "cost cap",
			runner.Outcome{Reason: runner.ReasonExited, Result: true, ResultError: true, ExitCode: 1, Text: "error_max_budget_usd"}},
		{"Crash", activities.ErrDelivery, "crash", "failed (crash)",
			runner.Outcome{Reason: runner.ReasonExited, ExitCode: 2, Failure: &runner.Failure{Class: runner.FailureCrash, Message: "boom"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := d.runFailed(t.Context(), a, in, t.TempDir(), c.out)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != c.typ || !app.NonRetryable() {
				t.Fatalf("error %v, want a non-retryable %s", err, c.typ)
			}
			var f activities.DeliveryFailure
			if err := app.Details(&f); err != nil {
				t.Fatal(err)
			}
			if f.Class != c.class || !strings.Contains(f.Summary, c.says) {
				t.Errorf("class %q, summary %q; want %q saying %q", f.Class, f.Summary, c.class, c.says)
			}
			if c.class == "rate_limit" && !f.ResetAt.Equal(reset) {
				t.Errorf("reset %v, want %v", f.ResetAt, reset)
			}
		})
	}
}

func TestKeyEnv(t *testing.T) {
	if got := keyEnv(activities.AgentDelivery{Runner: runner.Codex, Env: []string{"PATH", "HOME"}}); got != "OPENAI_API_KEY" {
		t.Errorf("codex with no key in env: %q", got)
	}
	if got := keyEnv(activities.AgentDelivery{Runner: runner.Codex, Env: []string{"MINE_KEY=x", "GH_TOKEN"}}); got != "MINE_KEY or GH_TOKEN" {
		t.Errorf("codex with keys in env: %q", got)
	}
}

func TestUnsetKeys(t *testing.T) {
	lookup := func(k string) (string, bool) { return "x", k == "SET_KEY" }
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"PATH", "SET_KEY", "MINE_KEY=x"}, ""},
		{[]string{"PATH", "OPENAI_API_KEY", "SET_KEY"}, "; OPENAI_API_KEY is unset in the worker's environment"},
		{[]string{"A_KEY", "GH_TOKEN"}, "; A_KEY and GH_TOKEN are unset in the worker's environment"},
	} {
		if got := unsetKeys(activities.AgentDelivery{Env: c.env}, lookup); got != c.want {
			t.Errorf("unsetKeys(%q) = %q; want %q", c.env, got, c.want)
		}
	}
}
