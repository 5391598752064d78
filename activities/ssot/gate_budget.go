package ssot

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// BudgetLimit is one budget a gate row counts against, checked where the
// row is written (RecordGate).
type BudgetLimit struct {
	// Key names the budget: raises are stored under it.
	Key string
	// Agent and Project narrow whose spend counts (empty: all).
	Agent, Project string
	// Period is "day" or "month".
	Period string
	// USD is the configured budget; raises for the period add to it.
	USD float64
	// Warn is the share of the budget from which an ungated row is
	// refused with a warning (the caller gates it and tries again); zero
	// is no warning.
	Warn float64
}

// BudgetError says a budget refused a row: Over when it is spent, else a
// warning that the row, with its cost, reaches Warn of it.
type BudgetError struct {
	Key    string
	Period string
	// SpentUSD is the spend before the row; LimitUSD the budget with the
	// period's raises.
	SpentUSD, LimitUSD, CostUSD float64
	Over                        bool
}

func (e *BudgetError) Error() string {
	if e.Over {
		return fmt.Sprintf("budget %s: $%.4f of $%.2f spent this %s", e.Key, e.SpentUSD, e.LimitUSD, e.Period)
	}
	return fmt.Sprintf("budget %s: $%.4f of $%.2f this %s (%.0f%%)", e.Key, e.SpentUSD+e.CostUSD, e.LimitUSD, e.Period,
		100*(e.SpentUSD+e.CostUSD)/e.LimitUSD)
}

// PeriodOf is the UTC day (YYYY-MM-DD) or month (YYYY-MM) of at.
func PeriodOf(period string, at time.Time) string {
	if period == "month" {
		return at.UTC().Format("2006-01")
	}
	return at.UTC().Format(time.DateOnly)
}

func sortedLimits(ls []BudgetLimit) []BudgetLimit {
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b BudgetLimit) int { return strings.Compare(a.Key, b.Key) })
	return ls
}

// checkBudgets checks the limits of g in tx. On PostgreSQL each budget's
// advisory lock, taken in key order, serialises the writers of one
// budget; SQLite has one writer at a time.
func (s *DB) checkBudgets(ctx context.Context, tx *sql.Tx, g GateRow, limits []BudgetLimit) error {
	for _, l := range limits {
		if s.engine == EnginePostgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "gate.budget:"+l.Key); err != nil {
				return err
			}
		}
		spent, limit, err := s.budgetIn(ctx, tx, l, g.ReceivedAt)
		if err != nil {
			return err
		}
		be := &BudgetError{Key: l.Key, Period: l.Period, SpentUSD: spent, LimitUSD: limit, CostUSD: g.CostUSD}
		switch {
		case spent >= limit:
			be.Over = true
			return be
		case !g.Gated && l.Warn > 0 && spent+g.CostUSD >= l.Warn*limit:
			return be
		}
	}
	return nil
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// raisedIn sums the raises of a budget for one period as their records
// in BudgetsSubject's chain say them: each row of gate_budget_raises
// must have its record there, unchanged and saying what the row says,
// or the sum is refused with a *RowError naming the row.
func (s *DB) raisedIn(ctx context.Context, q querier, key, periodOf string) (float64, error) {
	rows, err := q.QueryContext(ctx, s.rebind(`SELECT g.raise_id, g.budget_key, g.period_of, g.amount_usd, g.raised_by,
		`+nullRecordColumns+` FROM gate_budget_raises g LEFT JOIN records r ON r.id = g.raise_id AND r.task_id = ?
		WHERE g.budget_key = ? AND g.period_of = ?`), BudgetsSubject, key, periodOf)
	if err != nil {
		return 0, fmt.Errorf("summing the raises of budget %s: %w", key, err)
	}
	defer rows.Close()
	var usd float64
	for rows.Next() {
		row, rec, err := scanRaise(rows)
		if err != nil {
			return 0, fmt.Errorf("summing the raises of budget %s: %w", key, err)
		}
		chained, err := checkRaise(s.chainKey, row, rec)
		if err != nil {
			return 0, err
		}
		usd += chained.AmountUSD
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("summing the raises of budget %s: %w", key, err)
	}
	return usd, nil
}

// nullRecordColumns are recordColumns of records r, which a LEFT JOIN may
// leave NULL.
const nullRecordColumns = `COALESCE(r.task_id, ''), COALESCE(r.seq, 0), COALESCE(r.id, ''), COALESCE(r.kind, ''),
	COALESCE(r.recorded_at, 0), COALESCE(r.digest, ''), COALESCE(r.body, ''), COALESCE(r.body_hash, ''),
	COALESCE(r.prev_hash, ''), COALESCE(r.hash, '')`

// scanRaise reads a raise's row and its record (ID empty when it has
// none).
func scanRaise(sc scanner) (BudgetRaise, Record, error) {
	var (
		b    BudgetRaise
		r    Record
		us   int64
		body string
	)
	err := sc.Scan(&b.RaiseID, &b.BudgetKey, &b.PeriodOf, &b.AmountUSD, &b.RaisedBy,
		&r.TaskID, &r.Seq, &r.ID, &r.Kind, &us, &r.Digest, &body, &r.BodyHash, &r.PrevHash, &r.Hash)
	r.RecordedAt, r.Body = fromMicros(us), []byte(body)
	return b, r, err
}

// checkRaise checks a raise's row against its record in BudgetsSubject's
// chain and returns the raise as the record says it.
func checkRaise(key []byte, row BudgetRaise, rec Record) (BudgetRaise, error) {
	bad := func(format string, args ...any) (BudgetRaise, error) {
		return BudgetRaise{}, &RowError{Table: "gate_budget_raises", Key: row.RaiseID, Problem: fmt.Sprintf(format, args...)}
	}
	if rec.ID == "" {
		return bad("chain %s holds no record of it", BudgetsSubject)
	}
	if problem := rec.check(key, rec.PrevHash); problem != "" {
		return bad("its record in chain %s does not verify: %s", BudgetsSubject, problem)
	}
	var chained BudgetRaise
	if err := json.Unmarshal(rec.Body, &chained); err != nil {
		return bad("its record in chain %s does not decode: %v", BudgetsSubject, err)
	}
	switch {
	case chained.RaiseID != row.RaiseID:
		return bad("its record in chain %s is of raise %s", BudgetsSubject, chained.RaiseID)
	case chained.BudgetKey != row.BudgetKey:
		return bad("budget_key is %s, but its record in chain %s says %s", row.BudgetKey, BudgetsSubject, chained.BudgetKey)
	case chained.PeriodOf != row.PeriodOf:
		return bad("period_of is %s, but its record in chain %s says %s", row.PeriodOf, BudgetsSubject, chained.PeriodOf)
	case chained.AmountUSD != row.AmountUSD:
		return bad("amount_usd is %g, but its record in chain %s says %g", row.AmountUSD, BudgetsSubject, chained.AmountUSD)
	case chained.RaisedBy != row.RaisedBy:
		return bad("raised_by is %q, but its record in chain %s says %q", row.RaisedBy, BudgetsSubject, chained.RaisedBy)
	}
	return chained, nil
}

// BudgetRaise is what an admin added to a budget for one period.
type BudgetRaise struct {
	RaiseID   string    `json:"raise_id"`
	BudgetKey string    `json:"budget_key"`
	PeriodOf  string    `json:"period_of"`
	AmountUSD float64   `json:"amount_usd"`
	Note      string    `json:"note,omitempty"`
	RaisedBy  string    `json:"raised_by"`
	At        time.Time `json:"at"`
}

// BudgetsSubject is the chain every budget raise is recorded in, beside
// its row (ampflow audit verify checks it like any chain).
const BudgetsSubject = "budget-raises"

// RaiseBudget stores a raise, its row and its record in BudgetsSubject's
// chain in one transaction; its id is made when empty.
func (s *DB) RaiseBudget(ctx context.Context, r BudgetRaise) (BudgetRaise, error) {
	if err := checkID("budget_key", r.BudgetKey); err != nil {
		return BudgetRaise{}, err
	}
	if r.AmountUSD <= 0 {
		return BudgetRaise{}, &InvalidError{"amount_usd", "must be more than 0"}
	}
	if r.RaiseID == "" {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		r.RaiseID = "raise_" + hex.EncodeToString(b)
	}
	if r.At.IsZero() {
		r.At = time.Now()
	}
	r.At = fromMicros(micros(r.At))
	body, err := json.Marshal(r)
	if err != nil {
		return BudgetRaise{}, err
	}
	recs, err := prepare(BudgetsSubject, []Entry{{ID: r.RaiseID, Kind: "budget_raise", RecordedAt: r.At, Body: body}})
	if err != nil {
		return BudgetRaise{}, err
	}
	work := func(ctx context.Context, tx *sql.Tx) (AppendResult, bool, error) {
		_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO gate_budget_raises (raise_id, budget_key, period_of, amount_usd,
			note, raised_by, at) VALUES (?, ?, ?, ?, ?, ?, ?)`), r.RaiseID, r.BudgetKey, r.PeriodOf, r.AmountUSD, r.Note, r.RaisedBy, micros(r.At))
		if err != nil {
			return AppendResult{}, false, err
		}
		ar, _, err := s.saveIn(ctx, tx, BudgetsSubject, recs, nil, nil)
		return ar, true, err
	}
	if s.group != nil {
		_, err = s.group.do(ctx, &groupSave{ctx: ctx, fn: work, done: make(chan struct{})})
	} else {
		err = s.inTx(ctx, BudgetsSubject, work)
	}
	if err != nil {
		return BudgetRaise{}, fmt.Errorf("raising budget %s: %w", r.BudgetKey, err)
	}
	return r, nil
}

// BudgetRaised sums the raises of a budget for one period, as their
// records in BudgetsSubject's chain say them (raisedIn).
func (s *DB) BudgetRaised(ctx context.Context, key, periodOf string) (float64, error) {
	return s.raisedIn(ctx, s.db, key, periodOf)
}

// StaleGates lists up to limit gates that may have been left half done
// by a crash, received before before: pending gated signals (their
// workflow may not have started) and signals whose cost is still to be
// charged to their task. Oldest first; after, when set, is the last
// gate of the previous page.
func (s *DB) StaleGates(ctx context.Context, before time.Time, after GateRow, limit int) ([]GateRow, error) {
	at, id := int64(-1), ""
	if after.GateID != "" {
		at, id = micros(after.ReceivedAt), after.GateID
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+gateColumns+` FROM gates
		WHERE ((status = 'pending' AND gated = 1 AND kind = 'signal') OR task_charge = 1) AND received_at < ?
		AND (received_at > ? OR (received_at = ? AND gate_id > ?))
		ORDER BY received_at, gate_id LIMIT ?`), micros(before), at, at, id, limit)
	if err != nil {
		return nil, fmt.Errorf("listing stale gates: %w", err)
	}
	defer rows.Close()
	var out []GateRow
	for rows.Next() {
		g, err := scanGate(rows)
		if err != nil {
			return nil, fmt.Errorf("listing stale gates: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// TaskCharged records that a gate's cost was charged to its task.
func (s *DB) TaskCharged(ctx context.Context, gateID string) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE gates SET task_charge = 0 WHERE gate_id = ?`), gateID); err != nil {
		return fmt.Errorf("recording the task charge of gate %s: %w", gateID, err)
	}
	return nil
}

// TaskSpendThrough sums the cost of the signals that name a task, up to
// and including g in the order (received_at, gate_id): what the task had
// spent once g was counted, whenever it is asked.
func (s *DB) TaskSpendThrough(ctx context.Context, g GateRow) (float64, error) {
	var usd float64
	at := micros(g.ReceivedAt)
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(SUM(cost_usd), 0) FROM gates WHERE task_id = ?
		AND (received_at < ? OR (received_at = ? AND gate_id <= ?))`), g.TaskID, at, at, g.GateID).Scan(&usd)
	if err != nil {
		return 0, fmt.Errorf("summing the spend of task %s: %w", g.TaskID, err)
	}
	return usd, nil
}
