package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// GateSubject is the chain of gate gateID: its workflow's id. The signal,
// the gate's input, its decision and the decision's outcome are recorded
// there, and what a gate's row says is read against it.
func GateSubject(gateID string) string { return "gate-" + gateID }

// ResolveGrace is how long a gate's row may say it is resolved while its
// chain holds no outcome yet: the gate workflow resolves the row and
// appends the outcome record one after the other, in either order.
// Within it the chain's word (pending) stands; past it the row is one
// changed behind the store's back.
const ResolveGrace = 2 * time.Minute

// Gate statuses as rows and chains say them.
const (
	GatePending  = "pending"
	GateApproved = "approved"
	GateRejected = "rejected"
)

// Record kinds and id suffixes a gate's chain is read by.
const (
	kindSignal     = "signal"
	kindGateInput  = "gate"
	kindDecision   = "decision"
	suffixOutcome  = "-outcome"
	optionApproved = "approve"
)

// GateChain is what a gate's chain says of it: the one source the gate's
// status, and a contract's approval, are derived from.
type GateChain struct {
	GateID string
	// Records counts the records of the chain.
	Records int
	// Signal says the chain holds the signal's record; Gated is whether
	// that record says a gate fired.
	Signal, Gated bool
	// Outcome says the chain holds the decision's outcome: the option
	// taken, by whom and when.
	Outcome bool
	Option  string
	By      string
	At      time.Time
	// ContractID and ContractDigest name the contract the gate decides,
	// from the gate's input record; empty for a signal's gate.
	ContractID, ContractDigest string
	// Err is a chain that does not verify (a *ChainError) or a record of
	// it that does not decode.
	Err error
}

// Status is the gate's status as its chain says it: the outcome's, else
// approved for a signal no gate held, else pending.
func (c GateChain) Status() string {
	switch {
	case c.Outcome && c.Option == optionApproved:
		return GateApproved
	case c.Outcome:
		return GateRejected
	case c.Signal && !c.Gated:
		return GateApproved
	}
	return GatePending
}

// RowError is a table row that disagrees with the chain it is derived
// from: a row changed behind the store's back. The read that would have
// trusted it refuses it, naming it; ampflow audit verify reports it.
type RowError struct {
	Table, Key string
	Problem    string
}

func (e *RowError) Error() string {
	return fmt.Sprintf("%s row %s disagrees with its chain: %s", e.Table, e.Key, e.Problem)
}

// readGateChains reads and verifies the chains of gateIDs, in one query.
// A gate without records has a zero GateChain (with its id).
func (s *DB) readGateChains(ctx context.Context, q querier, gateIDs []string) (map[string]GateChain, error) {
	out := make(map[string]GateChain, len(gateIDs))
	if len(gateIDs) == 0 {
		return out, nil
	}
	subjects := make([]any, len(gateIDs))
	for i, id := range gateIDs {
		subjects[i] = GateSubject(id)
		out[id] = GateChain{GateID: id}
	}
	rows, err := q.QueryContext(ctx, s.rebind(`SELECT `+recordColumns+` FROM records WHERE task_id IN (?`+
		strings.Repeat(", ?", len(gateIDs)-1)+`) ORDER BY task_id, seq`), subjects...)
	if err != nil {
		return nil, fmt.Errorf("reading the chains of %d gates: %w", len(gateIDs), err)
	}
	defer rows.Close()
	recs := map[string][]Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("reading the chains of %d gates: %w", len(gateIDs), err)
		}
		recs[r.TaskID] = append(recs[r.TaskID], r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the chains of %d gates: %w", len(gateIDs), err)
	}
	for _, id := range gateIDs {
		out[id] = gateChainOf(s.chainKey, id, recs[GateSubject(id)])
	}
	return out, nil
}

// gateChainOf reads what a gate's records say, once they verify as a
// chain from its first record.
func gateChainOf(key []byte, gateID string, recs []Record) GateChain {
	c := GateChain{GateID: gateID, Records: len(recs)}
	if _, err := VerifyRecords(key, GateSubject(gateID), recs); err != nil {
		c.Err = err
		return c
	}
	for _, r := range recs {
		var err error
		switch {
		case r.Kind == kindSignal:
			var b struct {
				Gated *bool `json:"gated"`
			}
			if err = json.Unmarshal(r.Body, &b); err == nil && b.Gated == nil {
				err = errors.New("it does not say whether a gate fired")
			}
			if err == nil {
				c.Signal, c.Gated = true, *b.Gated
			}
		case r.Kind == kindGateInput:
			var b struct {
				Contract *struct {
					ID     string `json:"id"`
					Digest string `json:"digest"`
				} `json:"contract"`
			}
			if err = json.Unmarshal(r.Body, &b); err == nil && b.Contract != nil {
				c.ContractID, c.ContractDigest = b.Contract.ID, b.Contract.Digest
			}
		case r.Kind == kindDecision && strings.HasSuffix(r.ID, suffixOutcome):
			var b struct {
				Option string    `json:"option"`
				By     string    `json:"by"`
				At     time.Time `json:"at"`
			}
			if err = json.Unmarshal(r.Body, &b); err == nil {
				c.Outcome, c.Option, c.By, c.At = true, b.Option, b.By, b.At
			}
		}
		if err != nil {
			c.Err = fmt.Errorf("record %s of chain %s: %w", r.ID, GateSubject(gateID), err)
			return c
		}
	}
	return c
}

// apply checks gate row g against its chain at now and returns it as the
// chain says it stands; a *RowError names a row that disagrees.
func (c GateChain) apply(g GateRow, now time.Time) (GateRow, error) {
	subject := GateSubject(g.GateID)
	bad := func(format string, args ...any) (GateRow, error) {
		return GateRow{}, &RowError{Table: "gates", Key: g.GateID, Problem: fmt.Sprintf(format, args...)}
	}
	if c.Err != nil {
		return bad("chain %s does not hold: %v", subject, c.Err)
	}
	if g.Kind == KindRunner && !c.Signal && !c.Outcome {
		// A runner's spend is no decision: its chain holds nothing, and
		// a signal's row made to look like one still has its record.
		return g, nil
	}
	if c.Signal && c.Gated != g.Gated {
		return bad("gated is %t, but the signal's record in chain %s says %t", g.Gated, subject, c.Gated)
	}
	st := c.Status()
	switch {
	case g.Status == st:
		if c.Outcome && g.ResolvedBy != c.By {
			return bad("resolved_by is %q, but the outcome in chain %s was decided by %q", g.ResolvedBy, subject, c.By)
		}
	case g.Status == GatePending && c.Outcome:
		// The outcome is recorded; the row is about to be resolved.
	case st == GatePending && !g.ResolvedAt.IsZero() && now.Sub(g.ResolvedAt).Abs() < ResolveGrace:
		// The row is resolved; the outcome is about to be recorded.
	case st == GatePending:
		return bad("status is %s, but chain %s holds no outcome of its decision", g.Status, subject)
	case c.Outcome:
		return bad("status is %s, but the outcome in chain %s is %s by %s", g.Status, subject, st, c.By)
	default:
		return bad("status is %s, but chain %s says %s", g.Status, subject, st)
	}
	g.Status = st
	switch {
	case c.Outcome:
		g.ResolvedBy, g.ResolvedAt = c.By, c.At
	case st == GatePending:
		g.ResolvedBy, g.ResolvedAt = "", time.Time{}
	}
	return g, nil
}

// fromChains checks gate rows against their chains and returns them as
// the chains say they stand; the first row that disagrees is a
// *RowError.
func (s *DB) fromChains(ctx context.Context, gs []GateRow) ([]GateRow, error) {
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.GateID
	}
	chains, err := s.readGateChains(ctx, s.db, ids)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for i, g := range gs {
		if gs[i], err = chains[g.GateID].apply(g, now); err != nil {
			return nil, err
		}
	}
	return gs, nil
}

// GateChain reads and verifies gate gateID's chain; a chain that does not
// verify is one with Err set, and the error is the store's.
func (s *DB) GateChain(ctx context.Context, gateID string) (GateChain, error) {
	chains, err := s.readGateChains(ctx, s.db, []string{gateID})
	if err != nil {
		return GateChain{}, err
	}
	return chains[gateID], nil
}

// CheckContract checks a contract's row against the chain of the gate
// that decides it: an approved, rejected or redeemed contract with a gate
// is so only as that chain's outcome says, for exactly this contract. A
// *RowError names a row that disagrees.
func (c GateChain) CheckContract(row ContractRow) error {
	bad := func(format string, args ...any) error {
		return &RowError{Table: "contracts", Key: row.ID, Problem: fmt.Sprintf(format, args...)}
	}
	subject := GateSubject(row.GateID)
	if c.Err != nil {
		return bad("chain %s of its gate does not hold: %v", subject, c.Err)
	}
	switch row.State {
	case ContractApproved, ContractRejected, ContractRedeemed:
	default:
		return nil
	}
	if row.GateID == "" {
		if row.State == ContractRedeemed {
			return nil
		}
		return bad("state is %s, but it names no gate", row.State)
	}
	if c.ContractID != row.ID || c.ContractDigest != row.Digest {
		return bad("its gate %s decides contract %q of digest %q in chain %s, not this one", row.GateID, c.ContractID, c.ContractDigest, subject)
	}
	switch {
	case !c.Outcome:
		return bad("state is %s, but chain %s holds no outcome of its gate", row.State, subject)
	case row.State == ContractRejected:
		if c.Option == optionApproved {
			return bad("state is rejected, but the outcome in chain %s is approved by %s", subject, c.By)
		}
		return nil
	case c.Option != optionApproved:
		return bad("state is %s, but the outcome in chain %s is rejected by %s", row.State, subject, c.By)
	}
	if row.DecidedBy != c.By {
		return bad("decided_by is %q, but the outcome in chain %s was decided by %q", row.DecidedBy, subject, c.By)
	}
	return nil
}
