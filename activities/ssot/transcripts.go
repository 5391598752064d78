package ssot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// The kinds of transcript entries.
const (
	// TranscriptStart opens a run: Text names the CLI and its model.
	TranscriptStart = "start"
	// TranscriptText is the agent's text.
	TranscriptText = "text"
	// TranscriptToolCall is a tool call: Tool, and its input as Text.
	TranscriptToolCall = "tool_call"
	// TranscriptToolResult is a tool's result: the tail of its output as
	// Text, IsError, and ExitCode when the CLI reports one.
	TranscriptToolResult = "tool_result"
	// TranscriptError is an error the CLI reported.
	TranscriptError = "error"
	// TranscriptRetry is a request the CLI retries, or a wait for a rate
	// limit.
	TranscriptRetry = "retry"
	// TranscriptUsage is a model step's usage; the running totals are on
	// every entry.
	TranscriptUsage = "usage"
	// TranscriptPlan is the agent's plan.
	TranscriptPlan = "plan"
	// TranscriptResult is the CLI's final result.
	TranscriptResult = "result"
	// TranscriptEnd closes a run: Text says how it ended.
	TranscriptEnd = "end"
	// TranscriptNote is written by ampflow, not the agent: a run's
	// transcript elided past its bound, a warning, a message delivered.
	TranscriptNote = "note"
)

// Bounds of transcript entries.
const (
	// MaxTranscriptText bounds one entry's Text; the store refuses more.
	MaxTranscriptText = 64 << 10
	// MaxTranscriptBatch bounds the entries of one AppendTranscript.
	MaxTranscriptBatch = 500
)

// TranscriptEntry is one entry of a run's transcript.
type TranscriptEntry struct {
	TaskID string `json:"task_id"`
	// Seq orders a task's entries, from 1; the store assigns it.
	Seq  int64  `json:"seq"`
	Role string `json:"role"`
	// Run counts the role's runs of the task, from 1; 0 is outside a run.
	Run  int       `json:"run"`
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	Tool string    `json:"tool,omitempty"`
	Text string    `json:"text,omitempty"`
	// IsError marks a failed tool result or a result that is an error.
	IsError bool `json:"is_error,omitempty"`
	// ExitCode is a command's exit status, when the CLI reported one.
	ExitCode *int `json:"exit_code,omitempty"`
	// CostUSD, InputTokens and OutputTokens are the run's totals so far.
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
}

// TranscriptFilter selects entries of a task's transcript: those after
// seq After, of Role and Run when set, at most Limit (DefaultLimit when
// zero, never more than MaxLimit).
type TranscriptFilter struct {
	After int64
	Role  string
	Run   int
	Limit int
}

func checkTranscriptEntry(i int, e TranscriptEntry) error {
	field := func(f string) string { return fmt.Sprintf("entries[%d].%s", i, f) }
	switch {
	case e.Role == "":
		return &InvalidError{field("role"), "is required"}
	case len(e.Role) > 32:
		return &InvalidError{field("role"), "is longer than 32 bytes"}
	case e.Kind == "" || len(e.Kind) > 32:
		return &InvalidError{field("kind"), "must be 1 to 32 bytes"}
	case e.Run < 0:
		return &InvalidError{field("run"), "must not be negative"}
	case len(e.Tool) > 256:
		return &InvalidError{field("tool"), "is longer than 256 bytes"}
	case len(e.Text) > MaxTranscriptText:
		return &InvalidError{field("text"), fmt.Sprintf("is longer than %d bytes", MaxTranscriptText)}
	case !utf8.ValidString(e.Text) || !utf8.ValidString(e.Tool):
		return &InvalidError{field("text"), "is not valid UTF-8"}
	}
	return nil
}

// AppendTranscript adds entries to a task's transcript in one
// transaction and returns them with their seq. Entries with a zero At are
// stamped now.
func (s *DB) AppendTranscript(ctx context.Context, taskID string, entries []TranscriptEntry) ([]TranscriptEntry, error) {
	if err := checkID("task_id", taskID); err != nil {
		return nil, err
	}
	if len(entries) > MaxTranscriptBatch {
		return nil, &InvalidError{"entries", fmt.Sprintf("at most %d at a time", MaxTranscriptBatch)}
	}
	for i, e := range entries {
		if err := checkTranscriptEntry(i, e); err != nil {
			return nil, err
		}
	}
	if len(entries) == 0 {
		return nil, nil
	}
	out := make([]TranscriptEntry, len(entries))
	now := time.Now()
	for i, e := range entries {
		e.TaskID = taskID
		if e.At.IsZero() {
			e.At = now
		}
		e.At = fromMicros(micros(e.At))
		out[i] = e
	}
	var err error
	for try := 0; try < 5; try++ {
		if err = s.appendTranscript(ctx, taskID, out); err == nil || !raced(err) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("appending %d transcript entries of task %s: %w", len(out), taskID, err)
	}
	return out, nil
}

// appendTranscript numbers the entries after the task's last one: the
// numbering and the inserts are one transaction, and the writers of one
// task's transcript take turns (PostgreSQL: an advisory lock on the task;
// SQLite: its write lock), so no two take the same seq.
func (s *DB) appendTranscript(ctx context.Context, taskID string, out []TranscriptEntry) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if s.engine == EnginePostgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "transcript:"+taskID); err != nil {
			return err
		}
	}
	var last int64
	if err := s.txQueryRow(ctx, tx, `SELECT COALESCE(MAX(seq), 0) FROM transcripts WHERE task_id = ?`, taskID).Scan(&last); err != nil {
		return err
	}
	for i := range out {
		last++
		e := &out[i]
		e.Seq = last
		var code any
		if e.ExitCode != nil {
			code = *e.ExitCode
		}
		isErr := 0
		if e.IsError {
			isErr = 1
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO transcripts (task_id, seq, role, run, at, kind, tool, body, is_error, exit_code, cost_usd, input_tokens, output_tokens)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, taskID, e.Seq, e.Role, e.Run, micros(e.At), e.Kind, e.Tool, e.Text, isErr, code,
			e.CostUSD, e.InputTokens, e.OutputTokens); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Transcript reads a task's transcript entries in seq order; an empty
// list when it has none.
func (s *DB) Transcript(ctx context.Context, taskID string, f TranscriptFilter) ([]TranscriptEntry, error) {
	if err := checkID("task_id", taskID); err != nil {
		return nil, err
	}
	limit, err := limitOf(Page{Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	switch {
	case f.After < 0:
		return nil, &InvalidError{"after", "must not be negative"}
	case f.Run < 0:
		return nil, &InvalidError{"run", "must not be negative"}
	}
	q := `SELECT seq, role, run, at, kind, tool, body, is_error, exit_code, cost_usd, input_tokens, output_tokens
		FROM transcripts WHERE task_id = ? AND seq > ?`
	args := []any{taskID, f.After}
	if f.Role != "" {
		q += ` AND role = ?`
		args = append(args, f.Role)
	}
	if f.Run > 0 {
		q += ` AND run = ?`
		args = append(args, f.Run)
	}
	q += ` ORDER BY seq LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("reading the transcript of task %s: %w", taskID, err)
	}
	defer rows.Close()
	out := []TranscriptEntry{}
	for rows.Next() {
		e := TranscriptEntry{TaskID: taskID}
		var at int64
		var code sql.NullInt64
		var isErr int
		if err := rows.Scan(&e.Seq, &e.Role, &e.Run, &at, &e.Kind, &e.Tool, &e.Text, &isErr, &code, &e.CostUSD, &e.InputTokens, &e.OutputTokens); err != nil {
			return nil, fmt.Errorf("reading the transcript of task %s: %w", taskID, err)
		}
		e.At = fromMicros(at)
		e.IsError = isErr != 0
		if code.Valid {
			c := int(code.Int64)
			e.ExitCode = &c
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the transcript of task %s: %w", taskID, err)
	}
	return out, nil
}

// TranscriptRun is the number of the role's latest run of the task in its
// transcript, 0 when it has none.
func (s *DB) TranscriptRun(ctx context.Context, taskID, role string) (int, error) {
	var run int
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(MAX(run), 0) FROM transcripts WHERE task_id = ? AND role = ?`), taskID, role).Scan(&run)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("reading the runs of the %s of task %s: %w", role, taskID, err)
	}
	return run, nil
}

// NoteTranscript appends a note of ampflow's (a warning, a message
// delivered to the agent) to the transcript of the role's latest run of
// the task, or outside any run (run 0) when the role has had none. Other
// systems call it to put what they did to a run beside what the agent did.
func (s *DB) NoteTranscript(ctx context.Context, taskID, role, text string) (TranscriptEntry, error) {
	run, err := s.TranscriptRun(ctx, taskID, role)
	if err != nil {
		return TranscriptEntry{}, err
	}
	if len(text) > MaxTranscriptText {
		text = text[:MaxTranscriptText]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	out, err := s.AppendTranscript(ctx, taskID, []TranscriptEntry{{Role: role, Run: run, Kind: TranscriptNote, Text: text}})
	if err != nil {
		return TranscriptEntry{}, err
	}
	return out[0], nil
}

// RunnerSpendSince is what each role's runs spent from since on, by
// role, from the running cost on their transcripts' entries: a run's
// highest cost from since, less its highest before since (a run that
// spans since counts only its part after it).
func (s *DB) RunnerSpendSince(ctx context.Context, since time.Time) (map[string]float64, error) {
	at := micros(since)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT role, SUM(spent) FROM (
		SELECT t.role AS role, MAX(t.cost_usd) - COALESCE((SELECT MAX(b.cost_usd) FROM transcripts b
			WHERE b.task_id = t.task_id AND b.role = t.role AND b.run = t.run AND b.at < ?), 0) AS spent
		FROM transcripts t WHERE t.at >= ? AND t.run > 0 GROUP BY t.task_id, t.role, t.run) runs
		GROUP BY role`), at, at)
	if err != nil {
		return nil, fmt.Errorf("reading the runners' spend: %w", err)
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var role string
		var usd float64
		if err := rows.Scan(&role, &usd); err != nil {
			return nil, fmt.Errorf("reading the runners' spend: %w", err)
		}
		out[role] = usd
	}
	return out, rows.Err()
}
