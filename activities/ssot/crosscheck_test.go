package ssot

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// chainedStore fills s as the intake, the gate workflow, the contracts and
// an admin do: gate_free (a signal no gate held), gate_held (gated,
// pending), gate_ok (gated, approved by ops), contract cnt_ok approved at
// its gate gate_cok, cnt_wait awaiting its gate gate_cwait, and a raise
// of budget k for 2026-11-23.
func chainedStore(t *testing.T, s *DB) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, g := range []GateRow{
		{GateID: "gate_free", Kind: "signal", RunID: "r1", AgentID: "bot", Status: GateApproved, CostUSD: 0.1, ReceivedAt: now},
		{GateID: "gate_held", Kind: "signal", RunID: "r2", AgentID: "bot", Gated: true, Status: GatePending, ReceivedAt: now},
		{GateID: "gate_ok", Kind: "signal", RunID: "r3", AgentID: "bot", Gated: true, Status: GatePending, ReceivedAt: now},
	} {
		if _, ok, err := s.RecordGate(ctx, g, GateSubject(g.GateID), signalEntry(g), nil); err != nil || !ok {
			t.Fatalf("recording %s: %v %v", g.GateID, ok, err)
		}
	}
	if err := s.ResolveGate(ctx, "gate_ok", GateApproved, "ops", now); err != nil {
		t.Fatal(err)
	}
	appendOutcome(t, s, "gate_ok", "approve", "ops", now)
	for _, c := range []struct{ id, gate string }{{"cnt_ok", "gate_cok"}, {"cnt_wait", "gate_cwait"}} {
		row := contractRow(c.id, ContractAwaitingApproval, now)
		if err := s.PutContract(ctx, row); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.InsertGate(ctx, GateRow{GateID: c.gate, Kind: "contract", AgentID: "deployer", Gated: true, Status: GatePending, ReceivedAt: now}); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"gate_id":%q,"contract":{"id":%q,"digest":%q}}`, c.gate, c.id, row.Digest)
		if _, err := s.Append(ctx, GateSubject(c.gate), []Entry{{ID: c.gate + "-gate", Kind: "gate", RecordedAt: now, Body: []byte(body)}}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetContractGate(ctx, c.id, c.gate, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ResolveGate(ctx, "gate_cok", GateApproved, "ana", now); err != nil {
		t.Fatal(err)
	}
	appendOutcome(t, s, "gate_cok", "approve", "ana", now)
	if err := s.DecideContract(ctx, "cnt_ok", ContractApproved, "ana", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RaiseBudget(ctx, BudgetRaise{RaiseID: "raise_1", BudgetKey: "k", PeriodOf: "2026-11-23", AmountUSD: 2, RaisedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
}

// crossCheck returns the rows CrossCheck names, as "table key".
func crossCheck(t *testing.T, s *DB) []string {
	t.Helper()
	var found []string
	if _, err := s.CrossCheck(context.Background(), func(e *RowError) error {
		found = append(found, e.Table+" "+e.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

func TestCrossCheckUntouched(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		chainedStore(t, s)
		ctx := context.Background()
		n, err := s.CrossCheck(ctx, func(e *RowError) error { return fmt.Errorf("finding: %w", e) })
		if err != nil || n != (CrossCheckCounts{Gates: 5, Contracts: 2, Raises: 1}) {
			t.Fatalf("%+v %v", n, err)
		}
		for id, want := range map[string]string{"gate_free": GateApproved, "gate_held": GatePending, "gate_ok": GateApproved, "gate_cwait": GatePending} {
			if g, err := s.Gate(ctx, id); err != nil || g.Status != want {
				t.Errorf("%s: %+v %v, want %s", id, g, err, want)
			}
		}
		if usd, err := s.BudgetRaised(ctx, "k", "2026-11-23"); err != nil || usd != 2 {
			t.Fatalf("raised %v %v", usd, err)
		}
		// Every store verifies clean, chains and tables alike.
		if _, err := s.Verify(ctx, BudgetsSubject); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCrossCheckChangedRows: a row changed by hand is named by CrossCheck,
// and the read that decides on it refuses it with a *RowError naming it.
func TestCrossCheckChangedRows(t *testing.T) {
	tests := []struct {
		name string
		stmt string
		args []any
		want string // "table key" CrossCheck names
		// read is the decisive read; it must refuse the row.
		read func(ctx context.Context, s *DB) error
	}{
		{"GateApproved", `UPDATE gates SET status = 'approved', resolved_by = 'ops' WHERE gate_id = ?`, []any{"gate_held"}, "gates gate_held",
			func(ctx context.Context, s *DB) error { _, err := s.Gate(ctx, "gate_held"); return err }},
		{"GateUngated", `UPDATE gates SET gated = 0, status = 'approved' WHERE gate_id = ?`, []any{"gate_held"}, "gates gate_held",
			func(ctx context.Context, s *DB) error { _, _, err := s.GateByRun(ctx, "bot", "r2"); return err }},
		{"GateRejectedFlipped", `UPDATE gates SET status = 'rejected' WHERE gate_id = ?`, []any{"gate_ok"}, "gates gate_ok",
			func(ctx context.Context, s *DB) error { _, _, err := s.GateList(ctx, GateFilter{}, Page{}); return err }},
		{"GateResolvedBy", `UPDATE gates SET resolved_by = 'mallory' WHERE gate_id = ?`, []any{"gate_ok"}, "gates gate_ok",
			func(ctx context.Context, s *DB) error { _, err := s.Gate(ctx, "gate_ok"); return err }},
		{"ContractApproved", `UPDATE contracts SET state = 'approved', decided_by = 'ana' WHERE id = ?`, []any{"cnt_wait"}, "contracts cnt_wait",
			func(ctx context.Context, s *DB) error {
				row, err := s.Contract(ctx, "cnt_wait")
				if err != nil {
					return err
				}
				ch, err := s.GateChain(ctx, row.GateID)
				if err != nil {
					return err
				}
				return ch.CheckContract(row)
			}},
		{"ContractOtherGate", `UPDATE contracts SET state = 'approved', decided_by = 'ana', gate_id = 'gate_cok' WHERE id = ?`, []any{"cnt_wait"}, "contracts cnt_wait",
			func(ctx context.Context, s *DB) error {
				row, err := s.Contract(ctx, "cnt_wait")
				if err != nil {
					return err
				}
				ch, err := s.GateChain(ctx, row.GateID)
				if err != nil {
					return err
				}
				return ch.CheckContract(row)
			}},
		{"RaiseAmount", `UPDATE gate_budget_raises SET amount_usd = 100 WHERE raise_id = ?`, []any{"raise_1"}, "gate_budget_raises raise_1",
			func(ctx context.Context, s *DB) error { _, err := s.BudgetRaised(ctx, "k", "2026-11-23"); return err }},
		{"RaiseInserted", `INSERT INTO gate_budget_raises (raise_id, budget_key, period_of, amount_usd, note, raised_by, at) VALUES (?, 'k', '2026-11-23', 50, '', 'ops', 0)`,
			[]any{"raise_forged"}, "gate_budget_raises raise_forged",
			func(ctx context.Context, s *DB) error {
				_, _, err := s.RecordGate(ctx, GateRow{GateID: "gate_n", Kind: "signal", RunID: "rn", AgentID: "bot", Status: GateApproved, ReceivedAt: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)},
					"", nil, []BudgetLimit{{Key: "k", Agent: "bot", Period: "day", USD: 1}})
				return err
			}},
	}
	for _, e := range engines() {
		for _, tt := range tests {
			t.Run(e.name+"/"+tt.name, func(t *testing.T) {
				s := openStore(t, e.url(t))
				chainedStore(t, s)
				ctx := context.Background()
				if _, err := s.db.ExecContext(ctx, s.rebind(tt.stmt), tt.args...); err != nil {
					t.Fatal(err)
				}
				if got := crossCheck(t, s); len(got) != 1 || got[0] != tt.want {
					t.Fatalf("cross-check named %q, want [%s]", got, tt.want)
				}
				err := tt.read(ctx, s)
				var re *RowError
				if !errors.As(err, &re) || re.Table+" "+re.Key != tt.want {
					t.Fatalf("decisive read: %v, want a *RowError naming %s", err, tt.want)
				}
			})
		}
	}
}

// TestCrossCheckRaiseDeleted: a raise whose row is gone is named; the
// budget counts without it.
func TestCrossCheckRaiseDeleted(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		chainedStore(t, s)
		ctx := context.Background()
		if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM gate_budget_raises WHERE raise_id = ?`), "raise_1"); err != nil {
			t.Fatal(err)
		}
		if got := crossCheck(t, s); len(got) != 1 || got[0] != "gate_budget_raises raise_1" {
			t.Fatalf("named %q", got)
		}
		if usd, err := s.BudgetRaised(ctx, "k", "2026-11-23"); err != nil || usd != 0 {
			t.Fatalf("raised %v %v", usd, err)
		}
	})
}

// TestCrossCheckResolving: a gate whose row is resolved but whose outcome
// is not yet recorded (the workflow writes them one after the other) is
// no finding while it is recent, and reads as pending until its chain
// says otherwise; one resolved long ago without an outcome is named.
func TestCrossCheckResolving(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		chainedStore(t, s)
		ctx := context.Background()
		now := time.Now()
		if err := s.ResolveGate(ctx, "gate_held", GateApproved, "ops", now); err != nil {
			t.Fatal(err)
		}
		if got := crossCheck(t, s); len(got) != 0 {
			t.Fatalf("named %q while resolving", got)
		}
		if g, err := s.Gate(ctx, "gate_held"); err != nil || g.Status != GatePending || g.ResolvedBy != "" {
			t.Fatalf("resolving %+v %v; want pending until the chain holds the outcome", g, err)
		}
		// The outcome recorded first, the row not yet resolved: the
		// chain's word.
		appendOutcome(t, s, "gate_cwait", "reject", "ana", now)
		if g, err := s.Gate(ctx, "gate_cwait"); err != nil || g.Status != GateRejected || g.ResolvedBy != "ana" {
			t.Fatalf("outcome first %+v %v", g, err)
		}
		if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE gates SET resolved_at = ? WHERE gate_id = ?`),
			micros(now.Add(-ResolveGrace-time.Second)), "gate_held"); err != nil {
			t.Fatal(err)
		}
		if got := crossCheck(t, s); len(got) != 1 || got[0] != "gates gate_held" {
			t.Fatalf("named %q, want gate_held", got)
		}
	})
}
