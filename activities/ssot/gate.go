package ssot

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// GateRow is one signal or gate of the action gate: the audit record of
// a signal, whether it was gated, and where its gate stands.
type GateRow struct {
	GateID    string `json:"gate_id"`
	Kind      string `json:"kind"`
	RunID     string `json:"run_id,omitempty"`
	AgentID   string `json:"agent_id"`
	ProjectID string `json:"project_id,omitempty"`
	TaskID    string `json:"task_id,omitempty"`
	// Gated says a gate fired; an ungated signal is approved at once.
	Gated        bool    `json:"gated"`
	Status       string  `json:"status"`
	Model        string  `json:"model,omitempty"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	ReportedUSD  float64 `json:"reported_usd"`
	// CostUSD is what counts against budgets: the cost from the pricing
	// table when the model is priced, else the reported one.
	CostUSD    float64   `json:"cost_usd"`
	Mismatch   bool      `json:"cost_mismatch,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	ResolvedBy string    `json:"resolved_by,omitempty"`
	Reasons    []string  `json:"reasons,omitempty"`
	// Callback is where the webhook delivery stands: none, waiting,
	// delivered or failed.
	Callback string `json:"callback"`
	// Body is the gate's input as JSON.
	Body json.RawMessage `json:"body,omitempty"`
	// SignalHash is the hex SHA-256 of the signal as posted: a run posted
	// again with another body is told apart from a duplicate.
	SignalHash string `json:"signal_hash,omitempty"`
	// TaskCharge says the signal's cost is still to be charged to TaskID.
	TaskCharge bool `json:"task_charge,omitempty"`
}

// GateAttempt is one attempt to deliver a gate's resolution.
type GateAttempt struct {
	GateID     string    `json:"gate_id"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// GateFilter narrows GateList; empty fields match every gate.
type GateFilter struct {
	Agent, Project, Status, RunID string
}

const gateColumns = `gate_id, kind, COALESCE(run_id, ''), agent_id, project_id, task_id, gated, status, model,
	input_tokens, output_tokens, reported_usd, cost_usd, mismatch, received_at, resolved_at, resolved_by,
	reasons, callback, body, signal_hash, task_charge`

func scanGate(sc interface{ Scan(...any) error }) (GateRow, error) {
	var (
		g               GateRow
		gated, mismatch int
		charge          int
		recv, resolved  int64
		reasons, body   string
	)
	err := sc.Scan(&g.GateID, &g.Kind, &g.RunID, &g.AgentID, &g.ProjectID, &g.TaskID, &gated, &g.Status, &g.Model,
		&g.InputTokens, &g.OutputTokens, &g.ReportedUSD, &g.CostUSD, &mismatch, &recv, &resolved, &g.ResolvedBy,
		&reasons, &g.Callback, &body, &g.SignalHash, &charge)
	if err != nil {
		return GateRow{}, err
	}
	g.Gated, g.Mismatch, g.TaskCharge = gated != 0, mismatch != 0, charge != 0
	g.ReceivedAt = fromMicros(recv)
	if resolved != 0 {
		g.ResolvedAt = fromMicros(resolved)
	}
	if err := json.Unmarshal([]byte(reasons), &g.Reasons); err != nil {
		return GateRow{}, fmt.Errorf("gate %s: reasons: %w", g.GateID, err)
	}
	g.Body = json.RawMessage(body)
	return g, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// InsertGate stores g unless a gate of the same id or run id is stored
// already; it returns the stored row and whether this call wrote it. A
// signal posted twice is thus recorded once.
func (s *DB) InsertGate(ctx context.Context, g GateRow) (GateRow, bool, error) {
	return s.RecordGate(ctx, g, "", nil, nil)
}

// RecordGate is InsertGate that, when it writes the row, appends entries
// to the chain of subject in the same transaction: a signal's audit
// record and its gate row are written together or not at all. On SQLite
// it joins the group commit of every other save.
//
// Limits are the budgets the row counts against, checked in the same
// transaction as the insert, so concurrent signals cannot overshoot a
// budget together: a *BudgetError says a limit refused the row (it is
// not written).
func (s *DB) RecordGate(ctx context.Context, g GateRow, subject string, entries []Entry, limits []BudgetLimit) (GateRow, bool, error) {
	if err := checkID("gate_id", g.GateID); err != nil {
		return GateRow{}, false, err
	}
	if err := checkID("agent_id", g.AgentID); err != nil {
		return GateRow{}, false, err
	}
	var rows []Record
	if len(entries) > 0 {
		var err error
		if rows, err = prepare(subject, entries); err != nil {
			return GateRow{}, false, err
		}
	}
	if g.ReceivedAt.IsZero() {
		g.ReceivedAt = time.Now()
	}
	g.ReceivedAt = fromMicros(micros(g.ReceivedAt))
	if g.Callback == "" {
		g.Callback = "none"
	}
	if len(g.Body) == 0 {
		g.Body = json.RawMessage("{}")
	}
	if g.Reasons == nil {
		g.Reasons = []string{}
	}
	reasons, err := json.Marshal(g.Reasons)
	if err != nil {
		return GateRow{}, false, err
	}
	var run any
	if g.RunID != "" {
		run = g.RunID
	}
	at := g.ReceivedAt
	wrote := false
	limits = sortedLimits(limits)
	work := func(ctx context.Context, tx *sql.Tx) (AppendResult, bool, error) {
		if err := s.checkBudgets(ctx, tx, g, limits); err != nil {
			return AppendResult{}, false, err
		}
		res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO gates (gate_id, kind, run_id, agent_id, project_id, task_id,
			gated, status, model, input_tokens, output_tokens, reported_usd, cost_usd, mismatch, day, month,
			received_at, reasons, callback, body, signal_hash, task_charge)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
			g.GateID, g.Kind, run, g.AgentID, g.ProjectID, g.TaskID, boolInt(g.Gated), g.Status, g.Model,
			g.InputTokens, g.OutputTokens, g.ReportedUSD, g.CostUSD, boolInt(g.Mismatch),
			at.Format(time.DateOnly), at.Format("2006-01"), micros(at), string(reasons), g.Callback, string(g.Body),
			g.SignalHash, boolInt(g.TaskCharge))
		if err != nil {
			return AppendResult{}, false, err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return AppendResult{}, false, err
		}
		wrote = true
		if len(rows) == 0 {
			return AppendResult{}, true, nil
		}
		ar, _, err := s.saveIn(ctx, tx, subject, rows, nil, nil)
		return ar, true, err
	}
	if s.group != nil {
		_, err = s.group.do(ctx, &groupSave{ctx: ctx, fn: work, done: make(chan struct{})})
	} else {
		err = s.inTx(ctx, subject, work)
	}
	var be *BudgetError
	if errors.As(err, &be) {
		// A row stored already answers as it stands, whatever the
		// budgets say now.
		if g.RunID != "" {
			if stored, ok, rerr := s.GateByRun(ctx, g.AgentID, g.RunID); rerr == nil && ok {
				return stored, false, nil
			}
		}
		return GateRow{}, false, be
	}
	if err != nil {
		return GateRow{}, false, fmt.Errorf("storing gate %s: %w", g.GateID, err)
	}
	if wrote {
		return g, true, nil
	}
	if g.RunID != "" {
		stored, ok, err := s.GateByRun(ctx, g.AgentID, g.RunID)
		if err != nil {
			return GateRow{}, false, err
		}
		if ok {
			return stored, false, nil
		}
	}
	stored, err := s.Gate(ctx, g.GateID)
	return stored, false, err
}

// inTx runs work in a transaction of its own, holding subject's chain
// lock on PostgreSQL, and commits what it changed.
func (s *DB) inTx(ctx context.Context, subject string, work func(context.Context, *sql.Tx) (AppendResult, bool, error)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.engine == EnginePostgres && subject != "" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, subject); err != nil {
			return err
		}
	}
	_, changed, err := work(ctx, tx)
	if err != nil || !changed {
		return err
	}
	return tx.Commit()
}

// Gate reads one gate, its status as its chain says it (GateChain): a
// row that disagrees with its chain is a *RowError.
func (s *DB) Gate(ctx context.Context, gateID string) (GateRow, error) {
	row := s.db.QueryRowContext(ctx, s.rebind(`SELECT `+gateColumns+` FROM gates WHERE gate_id = ?`), gateID)
	g, err := scanGate(row)
	if errors.Is(err, sql.ErrNoRows) {
		return GateRow{}, fmt.Errorf("gate %s: %w", gateID, ErrNotFound)
	}
	if err != nil {
		return GateRow{}, fmt.Errorf("reading gate %s: %w", gateID, err)
	}
	gs, err := s.fromChains(ctx, []GateRow{g})
	if err != nil {
		return GateRow{}, err
	}
	return gs[0], nil
}

// GateByRun reads the gate of an agent's run id, as Gate does; another
// agent's run of the same id is not found.
func (s *DB) GateByRun(ctx context.Context, agentID, runID string) (GateRow, bool, error) {
	row := s.db.QueryRowContext(ctx, s.rebind(`SELECT `+gateColumns+` FROM gates WHERE agent_id = ? AND run_id = ?`), agentID, runID)
	g, err := scanGate(row)
	if errors.Is(err, sql.ErrNoRows) {
		return GateRow{}, false, nil
	}
	if err != nil {
		return GateRow{}, false, fmt.Errorf("reading the gate of run %s: %w", runID, err)
	}
	gs, err := s.fromChains(ctx, []GateRow{g})
	if err != nil {
		return GateRow{}, false, err
	}
	return gs[0], true, nil
}

// ResolveGate sets a pending gate's status to status (approved or
// rejected), by whom and when; a gate resolved already is left alone.
func (s *DB) ResolveGate(ctx context.Context, gateID, status, by string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`UPDATE gates SET status = ?, resolved_by = ?, resolved_at = ?
		WHERE gate_id = ? AND status = 'pending'`), status, by, micros(at), gateID)
	if err != nil {
		return fmt.Errorf("resolving gate %s: %w", gateID, err)
	}
	return nil
}

// SetGateCallback records where a gate's webhook delivery stands.
func (s *DB) SetGateCallback(ctx context.Context, gateID, callback string) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE gates SET callback = ? WHERE gate_id = ?`), callback, gateID); err != nil {
		return fmt.Errorf("recording the callback of gate %s: %w", gateID, err)
	}
	return nil
}

// AddGateAttempt records one delivery attempt; an attempt stored already
// (a retried activity) is kept as it is.
func (s *DB) AddGateAttempt(ctx context.Context, a GateAttempt) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO gate_callbacks (gate_id, attempt, at, status_code, error)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), a.GateID, a.Attempt, micros(a.At), a.StatusCode, a.Error)
	if err != nil {
		return fmt.Errorf("recording callback attempt %d of gate %s: %w", a.Attempt, a.GateID, err)
	}
	return nil
}

// GateAttempts lists a gate's delivery attempts in order.
func (s *DB) GateAttempts(ctx context.Context, gateID string) ([]GateAttempt, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT gate_id, attempt, at, status_code, error FROM gate_callbacks
		WHERE gate_id = ? ORDER BY attempt`), gateID)
	if err != nil {
		return nil, fmt.Errorf("reading the callbacks of gate %s: %w", gateID, err)
	}
	defer rows.Close()
	var out []GateAttempt
	for rows.Next() {
		var a GateAttempt
		var at int64
		if err := rows.Scan(&a.GateID, &a.Attempt, &at, &a.StatusCode, &a.Error); err != nil {
			return nil, fmt.Errorf("reading the callbacks of gate %s: %w", gateID, err)
		}
		a.At = fromMicros(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

// GateList lists gates newest first, each as Gate reads it.
func (s *DB) GateList(ctx context.Context, f GateFilter, p Page) ([]GateRow, string, error) {
	limit, err := limitOf(p)
	if err != nil {
		return nil, "", err
	}
	q, args, err := newestFirst{columns: gateColumns, table: "gates", timeCol: "received_at", idCol: "gate_id",
		filters: [][2]string{{"agent_id", f.Agent}, {"project_id", f.Project}, {"status", f.Status}, {"run_id", f.RunID}}}.query(p.Cursor, limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, "", fmt.Errorf("listing gates: %w", err)
	}
	defer rows.Close()
	var out []GateRow
	for rows.Next() {
		g, err := scanGate(rows)
		if err != nil {
			return nil, "", fmt.Errorf("listing gates: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("listing gates: %w", err)
	}
	out, next := cutPage(out, limit, func(g GateRow) string { return keyCursor(micros(g.ReceivedAt), g.GateID) })
	if out, err = s.fromChains(ctx, out); err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// SpendQuery names whose spending to sum: an agent, a project or both
// (empty fields match all), over the UTC day or month of At.
type SpendQuery struct {
	Agent, Project string
	// Period is "day" or "month".
	Period string
	At     time.Time
}

// Spend sums the cost and tokens of the signals a query names.
type Spend struct {
	USD          float64 `json:"usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Signals      int64   `json:"signals"`
}

// Spend sums what the signals of q cost, and the runs of runner-mode
// agents (KindRunner) it names.
func (s *DB) Spend(ctx context.Context, q SpendQuery) (Spend, error) {
	return spendIn(ctx, s.db, s, q)
}

func spendIn(ctx context.Context, db rowQuerier, s *DB, q SpendQuery) (Spend, error) {
	at := q.At.UTC()
	var where []string
	var args []any
	switch q.Period {
	case "day":
		where, args = append(where, "day = ?"), append(args, at.Format(time.DateOnly))
	case "month":
		where, args = append(where, "month = ?"), append(args, at.Format("2006-01"))
	default:
		return Spend{}, &InvalidError{"period", fmt.Sprintf("must be day or month, not %q", q.Period)}
	}
	if q.Agent != "" {
		where, args = append(where, "agent_id = ?"), append(args, q.Agent)
	}
	if q.Project != "" {
		where, args = append(where, "project_id = ?"), append(args, q.Project)
	}
	var sp Spend
	err := db.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(SUM(cost_usd), 0), COALESCE(SUM(input_tokens), 0),
		COALESCE(SUM(output_tokens), 0), COUNT(*) FROM gates WHERE kind IN ('signal', 'runner') AND `+strings.Join(where, " AND ")), args...).
		Scan(&sp.USD, &sp.InputTokens, &sp.OutputTokens, &sp.Signals)
	if err != nil {
		return Spend{}, fmt.Errorf("summing spend: %w", err)
	}
	return sp, nil
}

// TaskSpend sums the cost of the signals that name a task.
func (s *DB) TaskSpend(ctx context.Context, taskID string) (float64, error) {
	var usd float64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(SUM(cost_usd), 0) FROM gates WHERE task_id = ?`), taskID).Scan(&usd)
	if err != nil {
		return 0, fmt.Errorf("summing the spend of task %s: %w", taskID, err)
	}
	return usd, nil
}
