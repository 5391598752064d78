package ssot

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestRunnerSpendCountsOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		run := RunnerSpend{Key: "msg_1/run/5/1/1", Agent: "runner:executor", Project: "/repos/app", TaskID: "task_1",
			Model: "claude-sonnet-4-6", InputTokens: 1000, OutputTokens: 200, CostUSD: 0.4, At: at}
		for i, want := range []bool{true, false} {
			wrote, err := s.RecordRunnerSpend(ctx, run)
			if err != nil || wrote != want {
				t.Fatalf("record %d: wrote %v, %v; want %v", i, wrote, err, want)
			}
		}
		run.Key, run.CostUSD = "msg_1/run/5/1/2", 0.35
		if _, err := s.RecordRunnerSpend(ctx, run); err != nil {
			t.Fatal(err)
		}
		// A gated agent's signal on the same budget counts beside them.
		g := GateRow{GateID: "gate_1", Kind: "signal", RunID: "r1", AgentID: "runner:executor", ProjectID: "/repos/app",
			Status: "approved", CostUSD: 0.1, ReceivedAt: at}
		if _, _, err := s.RecordGate(ctx, g, "", nil, nil); err != nil {
			t.Fatal(err)
		}
		sp, err := s.Spend(ctx, SpendQuery{Agent: "runner:executor", Project: "/repos/app", Period: "day", At: at})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sp.USD-0.85) > 1e-9 || sp.Signals != 3 || sp.InputTokens != 2000 {
			t.Fatalf("spend %+v; want $0.85 over 3 rows, 2000 input tokens", sp)
		}
		// The task counts its runners' cost itself: the gates' task
		// spend leaves the runs out.
		if usd, err := s.TaskSpend(ctx, "task_1"); err != nil || usd != 0 {
			t.Fatalf("task spend $%v, %v; want 0", usd, err)
		}
		limits := []BudgetLimit{
			{Key: BudgetKey("runner:executor", "", "day"), Agent: "runner:executor", Period: "day", USD: 2},
			{Key: BudgetKey("", "/repos/app", "month"), Project: "/repos/app", Period: "month", USD: 1},
			{Key: BudgetKey("other", "", "day"), Agent: "other", Period: "day", USD: 0.01},
		}
		mine := BudgetsFor(limits, "runner:executor", "/repos/app")
		if len(mine) != 2 {
			t.Fatalf("budgets for the runner: %+v", mine)
		}
		st, err := s.BudgetLeft(ctx, mine, at)
		if err != nil {
			t.Fatal(err)
		}
		if st.Key != "*:/repos/app:month" || st.Over || math.Abs(st.LeftUSD-0.15) > 1e-9 {
			t.Fatalf("budget state %+v; want *:/repos/app:month with $0.15 left", st)
		}
		run.Key, run.CostUSD = "msg_2/run/5/1/1", 0.2
		if _, err := s.RecordRunnerSpend(ctx, run); err != nil {
			t.Fatal(err)
		}
		if st, err = s.BudgetLeft(ctx, mine, at); err != nil || !st.Over || st.LeftUSD != 0 || st.Key != "*:/repos/app:month" {
			t.Fatalf("budget state %+v, %v; want *:/repos/app:month spent", st, err)
		}
		// A raise for the month opens it again.
		if _, err := s.RaiseBudget(ctx, BudgetRaise{BudgetKey: st.Key, PeriodOf: PeriodOf("month", at), AmountUSD: 1, RaisedBy: "ops", At: at}); err != nil {
			t.Fatal(err)
		}
		if st, err = s.BudgetLeft(ctx, mine, at); err != nil || st.Over || math.Abs(st.LeftUSD-0.95) > 1e-9 {
			t.Fatalf("budget state %+v, %v; want $0.95 left after the raise", st, err)
		}
	})
}
