package ssot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// CI round states. A round is pending until its verdict: passed, failed,
// timed out (still pending at the task's ci.timeout), or none (the
// provider has no CI for the commit).
const (
	CIRoundPending  = "pending"
	CIRoundPassed   = "passed"
	CIRoundFailed   = "failed"
	CIRoundTimedOut = "timed_out"
	CIRoundNone     = "none"
)

// Bounds of a task's kept CI rounds.
const (
	// MaxCIRounds is how many rounds a task keeps; past it the oldest go.
	MaxCIRounds = 100
	// MaxCIRoundLog bounds the log kept with a round: its last bytes.
	MaxCIRoundLog = 16 << 10
)

// CIRoundsName is the file beside a task's records that keeps its CI
// rounds, written by the CI activity as it reads (never through workflow
// history).
const CIRoundsName = "ci/rounds.json"

// CILogName is where the command provider keeps the whole output of its
// run of commit, beside the task's records (at most MaxFileSize, its
// last bytes).
func CILogName(commit string) string { return "ci/" + commit + ".log" }

// CILogPath is the HTTP API path that serves the log kept at CILogName.
func CILogPath(taskID, commit string) string { return "/v1/tasks/" + taskID + "/ci/logs/" + commit }

// CIRound is one round of a task's CI: the readings of one result's
// commit, from the first to the verdict.
type CIRound struct {
	// Round numbers the task's rounds from 1.
	Round int `json:"round"`
	// Subtask is the subtask whose result CI read.
	Subtask string `json:"subtask,omitempty"`
	// Commit is the commit read, in full once the provider resolved it.
	Commit string `json:"commit"`
	// State is one of the CIRound states.
	State string `json:"state"`
	// Failing names the failing checks; Checks maps each check to its
	// state.
	Failing []string          `json:"failing"`
	Checks  map[string]string `json:"checks,omitempty"`
	// Log is the tail of what the failing checks printed (at most
	// MaxCIRoundLog bytes, secrets masked); LogURL is where the provider
	// shows the whole of it, when it gives one.
	Log    string `json:"log,omitempty"`
	LogURL string `json:"log_url,omitempty"`
	// LogKept says the whole log is kept beside the task's records, at
	// CILogName(Commit) (the command provider's).
	LogKept bool `json:"log_kept,omitempty"`
	// Reads counts the readings of the round.
	Reads      int       `json:"reads"`
	StartedAt  time.Time `json:"started_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// MarshalJSON writes failing as [] when no check fails.
func (r CIRound) MarshalJSON() ([]byte, error) {
	type plain CIRound
	p := plain(r)
	if p.Failing == nil {
		p.Failing = []string{}
	}
	return json.Marshal(p)
}

// Finished reports whether the round has its verdict.
func (r CIRound) Finished() bool { return r.State != CIRoundPending && r.State != "" }

// FileKeeper keeps files beside a task's records (*DB, Chains).
type FileKeeper interface {
	PutFile(ctx context.Context, taskID, name string, data []byte) error
	File(ctx context.Context, taskID, name string) ([]byte, error)
}

// FileReader reads files beside a task's records.
type FileReader interface {
	File(ctx context.Context, taskID, name string) ([]byte, error)
}

// CIRounds reads a task's CI rounds, oldest first; none is an empty list.
func CIRounds(ctx context.Context, fs FileReader, taskID string) ([]CIRound, error) {
	data, err := fs.File(ctx, taskID, CIRoundsName)
	if errors.Is(err, ErrNotFound) {
		return []CIRound{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CI rounds of task %s: %w", taskID, err)
	}
	rounds := []CIRound{}
	if err := json.Unmarshal(data, &rounds); err != nil {
		return nil, fmt.Errorf("decoding the CI rounds of task %s: %w", taskID, err)
	}
	return rounds, nil
}

// SaveCIRound writes a reading of round r.Round: the first one starts
// the round, a later one updates its state, and the first verdict sets
// FinishedAt. A round that has its verdict keeps it: a retried reading
// changes nothing. at is the reading's time. The task's writes are
// sequential (its workflow reads CI one call at a time).
func SaveCIRound(ctx context.Context, fs FileKeeper, taskID string, r CIRound, at time.Time) error {
	if r.Round <= 0 {
		return &InvalidError{"round", fmt.Sprintf("must be 1 or more, not %d", r.Round)}
	}
	rounds, err := CIRounds(ctx, fs, taskID)
	if err != nil {
		return err
	}
	if len(r.Log) > MaxCIRoundLog {
		r.Log = "…" + r.Log[len(r.Log)-MaxCIRoundLog:]
	}
	at = at.UTC()
	i := len(rounds)
	for j := range rounds {
		if rounds[j].Round == r.Round {
			i = j
			break
		}
	}
	if i < len(rounds) {
		old := rounds[i]
		if old.Finished() {
			return nil
		}
		r.StartedAt, r.Reads = old.StartedAt, old.Reads
	} else {
		r.StartedAt = at
		rounds = append(rounds, r)
	}
	r.Reads++
	r.UpdatedAt = at
	if r.Finished() {
		r.FinishedAt = at
	}
	rounds[i] = r
	if len(rounds) > MaxCIRounds {
		rounds = rounds[len(rounds)-MaxCIRounds:]
	}
	data, err := json.Marshal(rounds)
	if err != nil {
		return fmt.Errorf("encoding the CI rounds of task %s: %w", taskID, err)
	}
	return fs.PutFile(ctx, taskID, CIRoundsName, data)
}
