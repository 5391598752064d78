package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// crossPage is how many rows CrossCheck reads at a time.
var crossPage = 500

// CrossCheckCounts says how many rows CrossCheck compared with their
// chains.
type CrossCheckCounts struct {
	Gates     int `json:"gates"`
	Contracts int `json:"contracts"`
	Raises    int `json:"budget_raises"`
}

// CrossCheck compares the rows derived from chains with those chains: each
// gate's status with its chain's signal and outcome, each decided
// contract with its gate's outcome, each budget raise with its record in
// BudgetsSubject's chain (and each such record with its row). It calls
// found with every row that disagrees (a *RowError) and stops at the
// first error found returns. It may run while workers write: a gate
// resolving while it runs is not a finding (ResolveGrace), and a raise's
// row and record are read in one statement.
func (s *DB) CrossCheck(ctx context.Context, found func(*RowError) error) (CrossCheckCounts, error) {
	var n CrossCheckCounts
	var err error
	if n.Gates, err = s.crossGates(ctx, found); err != nil {
		return n, err
	}
	if n.Contracts, err = s.crossContracts(ctx, found); err != nil {
		return n, err
	}
	n.Raises, err = s.crossRaises(ctx, found)
	return n, err
}

// report passes a *RowError to found and returns any other error.
func report(err error, found func(*RowError) error) error {
	var re *RowError
	if errors.As(err, &re) {
		return found(re)
	}
	return err
}

func (s *DB) crossGates(ctx context.Context, found func(*RowError) error) (int, error) {
	n, after := 0, ""
	for {
		rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+gateColumns+` FROM gates WHERE gate_id > ? ORDER BY gate_id LIMIT ?`), after, crossPage)
		if err != nil {
			return n, fmt.Errorf("cross-checking gates: %w", err)
		}
		var gs []GateRow
		for rows.Next() {
			g, err := scanGate(rows)
			if err != nil {
				rows.Close()
				return n, fmt.Errorf("cross-checking gates: %w", err)
			}
			gs = append(gs, g)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return n, fmt.Errorf("cross-checking gates: %w", err)
		}
		if len(gs) == 0 {
			return n, nil
		}
		ids := make([]string, len(gs))
		for i, g := range gs {
			ids[i] = g.GateID
		}
		// Rows first, then chains: a gate resolving in between shows its
		// outcome in the chain, which a pending row allows.
		chains, err := s.readGateChains(ctx, s.db, ids)
		if err != nil {
			return n, err
		}
		now := time.Now()
		for _, g := range gs {
			n++
			if _, err := chains[g.GateID].apply(g, now); err != nil {
				if err := report(err, found); err != nil {
					return n, err
				}
			}
		}
		after = gs[len(gs)-1].GateID
	}
}

func (s *DB) crossContracts(ctx context.Context, found func(*RowError) error) (int, error) {
	n, after := 0, ""
	for {
		rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT id, state, gate_id, decided_by, digest FROM contracts
			WHERE id > ? AND (gate_id <> '' OR state IN (?, ?)) ORDER BY id LIMIT ?`), after, ContractApproved, ContractRejected, crossPage)
		if err != nil {
			return n, fmt.Errorf("cross-checking contracts: %w", err)
		}
		var cs []ContractRow
		for rows.Next() {
			var c ContractRow
			if err := rows.Scan(&c.ID, &c.State, &c.GateID, &c.DecidedBy, &c.Digest); err != nil {
				rows.Close()
				return n, fmt.Errorf("cross-checking contracts: %w", err)
			}
			cs = append(cs, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return n, fmt.Errorf("cross-checking contracts: %w", err)
		}
		if len(cs) == 0 {
			return n, nil
		}
		var ids []string
		for _, c := range cs {
			if c.GateID != "" {
				ids = append(ids, c.GateID)
			}
		}
		chains, err := s.readGateChains(ctx, s.db, ids)
		if err != nil {
			return n, err
		}
		for _, c := range cs {
			n++
			if err := report(chains[c.GateID].CheckContract(c), found); err != nil {
				return n, err
			}
		}
		after = cs[len(cs)-1].ID
	}
}

// crossRaises reads every raise's row with its record, and every raise
// record without a row, in one statement: a raise committed meanwhile is
// seen whole or not at all.
func (s *DB) crossRaises(ctx context.Context, found func(*RowError) error) (int, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT g.raise_id, g.budget_key, g.period_of, g.amount_usd, g.raised_by,
		`+nullRecordColumns+` FROM gate_budget_raises g LEFT JOIN records r ON r.id = g.raise_id AND r.task_id = ?
		UNION ALL
		SELECT '', '', '', 0, '', `+nullRecordColumns+` FROM records r WHERE r.task_id = ?
		AND NOT EXISTS (SELECT 1 FROM gate_budget_raises g WHERE g.raise_id = r.id)`), BudgetsSubject, BudgetsSubject)
	if err != nil {
		return 0, fmt.Errorf("cross-checking budget raises: %w", err)
	}
	type pair struct {
		row BudgetRaise
		rec Record
	}
	var all []pair
	for rows.Next() {
		row, rec, err := scanRaise(rows)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("cross-checking budget raises: %w", err)
		}
		all = append(all, pair{row, rec})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("cross-checking budget raises: %w", err)
	}
	n := 0
	for _, p := range all {
		n++
		if p.row.RaiseID == "" {
			// A raise in the chain whose row is gone.
			key := p.rec.ID
			var chained BudgetRaise
			if json.Unmarshal(p.rec.Body, &chained) == nil && chained.RaiseID != "" {
				key = chained.RaiseID
			}
			err := &RowError{Table: "gate_budget_raises", Key: key,
				Problem: fmt.Sprintf("is missing (deleted), but chain %s records it as record #%d", BudgetsSubject, p.rec.Seq)}
			if err := found(err); err != nil {
				return n, err
			}
			continue
		}
		if _, err := checkRaise(s.chainKey, p.row, p.rec); err != nil {
			if err := report(err, found); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}
