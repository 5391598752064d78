package ssot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

func TestGateBudgetAtomic(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		limits := []BudgetLimit{{Key: "day.bot.*", Agent: "bot", Period: "day", USD: 0.02}}
		other := openStore(t, u)
		var wg sync.WaitGroup
		var mu sync.Mutex
		wrote, over := 0, 0
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db := s
				if i%2 == 1 {
					db = other
				}
				g := GateRow{GateID: fmt.Sprintf("gate_%d", i), Kind: "signal", RunID: fmt.Sprintf("r%d", i), AgentID: "bot",
					Status: "approved", CostUSD: 0.015, ReceivedAt: at}
				_, ok, err := db.RecordGate(ctx, g, "", nil, limits)
				var be *BudgetError
				mu.Lock()
				defer mu.Unlock()
				switch {
				case errors.As(err, &be) && be.Over:
					over++
				case err != nil:
					t.Error(err)
				case ok:
					wrote++
				}
			}()
		}
		wg.Wait()
		sp, err := s.Spend(ctx, SpendQuery{Agent: "bot", Period: "day", At: at})
		if err != nil {
			t.Fatal(err)
		}
		// As one at a time: the first two fit (the second starts below
		// $0.02), every later one finds the budget spent.
		if wrote != 2 || over != 14 || math.Abs(sp.USD-0.03) > 1e-9 {
			t.Fatalf("wrote %d, refused %d, spent $%.4f; want 2, 14, $0.03", wrote, over, sp.USD)
		}
		// A raise for the day lets signals through again; it is recorded
		// in the budgets' chain.
		if _, err := s.RaiseBudget(ctx, BudgetRaise{BudgetKey: "day.bot.*", PeriodOf: PeriodOf("day", at), AmountUSD: 0.05, RaisedBy: "ops", At: at}); err != nil {
			t.Fatal(err)
		}
		if recs, _, err := s.History(ctx, BudgetsSubject, Page{}); err != nil || len(recs) != 1 || recs[0].Kind != "budget_raise" {
			t.Fatalf("raise records %+v %v", recs, err)
		}
		g := GateRow{GateID: "gate_x", Kind: "signal", RunID: "rx", AgentID: "bot", Status: "approved", CostUSD: 0.01, ReceivedAt: at}
		if _, ok, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), limits); err != nil || !ok {
			t.Fatalf("after a raise: %v %v", ok, err)
		}
		// The raise holds for its day only.
		g = GateRow{GateID: "gate_y", Kind: "signal", RunID: "ry", AgentID: "bot", Status: "approved", CostUSD: 0.03, ReceivedAt: at.Add(24 * time.Hour)}
		if _, _, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), limits); err != nil {
			t.Fatalf("next day: %v", err)
		}
		g.GateID, g.RunID = "gate_z", "rz"
		var be *BudgetError
		if _, _, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), limits); !errors.As(err, &be) || !be.Over || be.LimitUSD != 0.02 {
			t.Fatalf("next day, spent: %v", err)
		}
		// An ungated row that reaches the warning share is refused with a
		// warning; gated, it is written.
		warn := []BudgetLimit{{Key: "month.*.p", Project: "p", Period: "month", USD: 1, Warn: 0.8}}
		g = GateRow{GateID: "gate_w", Kind: "signal", RunID: "rw", AgentID: "bot", ProjectID: "p", Status: "approved", CostUSD: 0.9, ReceivedAt: at}
		if _, _, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), warn); !errors.As(err, &be) || be.Over {
			t.Fatalf("warning: %v", err)
		}
		g.Gated, g.Status = true, "pending"
		if _, ok, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), warn); err != nil || !ok {
			t.Fatalf("gated: %v %v", ok, err)
		}
		// A duplicate answers as stored though the budget is now spent.
		g.GateID = "gate_w2"
		if got, ok, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), limits); err != nil || ok || got.GateID != "gate_w" {
			t.Fatalf("duplicate over budget: %+v %v %v", got, ok, err)
		}
	})
}

func TestGateRunIDsPerAgent(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, u string) {
		ctx := context.Background()
		at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
		for _, a := range []string{"a", "b"} {
			g := GateRow{GateID: "gate_" + a, Kind: "signal", RunID: "same", AgentID: a, Status: "approved", ReceivedAt: at,
				SignalHash: "h" + a, TaskID: "t", TaskCharge: true}
			if _, ok, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), nil); err != nil || !ok {
				t.Fatalf("agent %s: %v %v", a, ok, err)
			}
		}
		got, ok, err := s.GateByRun(ctx, "b", "same")
		if err != nil || !ok || got.GateID != "gate_b" || got.SignalHash != "hb" || !got.TaskCharge {
			t.Fatalf("%+v %v %v", got, ok, err)
		}
		if _, ok, _ := s.GateByRun(ctx, "c", "same"); ok {
			t.Fatal("another agent's run found")
		}
		// Stale gates: both still to be charged, paged.
		first, err := s.StaleGates(ctx, at.Add(time.Second), GateRow{}, 1)
		if err != nil || len(first) != 1 {
			t.Fatalf("%v %v", first, err)
		}
		if err := s.TaskCharged(ctx, first[0].GateID); err != nil {
			t.Fatal(err)
		}
		rest, err := s.StaleGates(ctx, at.Add(time.Second), first[0], 10)
		if err != nil || len(rest) != 1 || rest[0].GateID == first[0].GateID {
			t.Fatalf("%v %v", rest, err)
		}
		if none, _ := s.StaleGates(ctx, at, GateRow{}, 10); len(none) != 0 {
			t.Fatalf("newer than before: %v", none)
		}
	})
}
