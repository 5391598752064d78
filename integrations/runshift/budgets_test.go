package runshift

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/config/pricing"
)

// TestSignalBudget: from 80 % of a budget every signal is gated; once it
// is spent, signals are refused with 402 and not recorded.
func TestSignalBudget(t *testing.T) {
	g := newTestGate(t, func(c *config.Config) {
		c.Pricing.Budgets = []pricing.Budget{{Agent: "resume-tailor", Period: pricing.PeriodDay, USD: 0.05}}
	})
	// Each signal costs $0.014736 by the pricing table: 1, 2 under 80 %,
	// the third reaches it, the fourth passes the budget, the fifth is refused.
	want := []int{200, 200, 202, 202, 402}
	for i, st := range want {
		r := g.do("POST", "/v1/signals", tailorKey, payload(fmt.Sprintf("b%d", i), false)).want(t, st)
		if st == 402 && !strings.Contains(string(r.body), "budget_exceeded") {
			t.Fatalf("%s", r.body)
		}
	}
	sp, _ := g.store.Spend(context.Background(), ssot.SpendQuery{Agent: "resume-tailor", Period: "day", At: testNow})
	if sp.Signals != 4 {
		t.Fatalf("spend %+v", sp)
	}
	// An admin sees the budget spent and raises it for the day: the
	// refused signal is taken again, gated (above 80 % of the raised
	// budget).
	var list BudgetList
	if err := json.Unmarshal(g.do("GET", "/v1/budgets", coordToken, nil).want(t, 200).body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Budgets) != 1 || list.Budgets[0].Key != "resume-tailor:*:day" || list.Budgets[0].State != "exhausted" || list.Budgets[0].Signals != 4 {
		t.Fatalf("budgets %+v", list)
	}
	raise := map[string]any{"amount_usd": 0.02, "note": "release day"}
	g.do("POST", "/v1/budgets/resume-tailor:*:day/raise", coordToken, raise).want(t, 403)
	g.do("POST", "/v1/budgets/nobody:*:day/raise", adminToken, raise).want(t, 404)
	g.do("POST", "/v1/budgets/resume-tailor:*:day/raise", adminToken, map[string]any{"amount_usd": -1}).want(t, 400)
	var rr RaiseReply
	if err := json.Unmarshal(g.do("POST", "/v1/budgets/resume-tailor:*:day/raise", adminToken, raise).want(t, 200).body, &rr); err != nil {
		t.Fatal(err)
	}
	if rr.Raise.RaisedBy != "ops" || rr.Raise.PeriodOf != "2026-11-23" || rr.Budget.LimitUSD != 0.07 || rr.Budget.State != "warn" {
		t.Fatalf("raise %+v", rr)
	}
	g.do("POST", "/v1/signals", tailorKey, payload("b4", false)).want(t, 202)
	g.do("POST", "/v1/signals", tailorKey, payload("b5", false)).want(t, 402)
	// The raise is the day's: tomorrow the configured budget holds.
	g.intake.Now = func() time.Time { return testNow.Add(24 * time.Hour) }
	if err := json.Unmarshal(g.do("GET", "/v1/budgets", adminToken, nil).want(t, 200).body, &list); err != nil || list.Budgets[0].LimitUSD != 0.05 {
		t.Fatalf("tomorrow %+v %v", list, err)
	}
	// Another agent is not held by this budget.
	d := payload("d1", false)
	d["agent_id"] = "deployer"
	g.do("POST", "/v1/signals", deployKey, d).want(t, 200)
}

// TestSignalBudgetConcurrent: signals posted at once cannot overshoot a
// budget together: as one at a time, the two that start under $0.02 are
// taken and every later one is refused.
func TestSignalBudgetConcurrent(t *testing.T) {
	g := newTestGate(t, func(c *config.Config) {
		c.Pricing.Budgets = []pricing.Budget{{Agent: "resume-tailor", Period: pricing.PeriodDay, USD: 0.02}}
		c.Gate.Rules = []config.GateRule{{Gate: config.GateNever}}
	})
	var wg sync.WaitGroup
	codes := make([]int, 16)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = g.do("POST", "/v1/signals", tailorKey, payload(fmt.Sprintf("c%d", i), false)).status
		}()
	}
	wg.Wait()
	sp, err := g.store.Spend(context.Background(), ssot.SpendQuery{Agent: "resume-tailor", Period: "day", At: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Signals != 2 || sp.USD > 0.03 {
		t.Fatalf("recorded %d signals, $%.4f (answers %v); want 2, at most $0.03", sp.Signals, sp.USD, codes)
	}
}
