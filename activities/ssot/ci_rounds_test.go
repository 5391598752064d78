package ssot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCIRounds(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		const id = "T-2026-001"
		if rs, err := CIRounds(ctx, s, id); err != nil || len(rs) != 0 || rs == nil {
			t.Fatalf("CIRounds before any: %v, %v; want an empty list", rs, err)
		}
		t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
		save := func(r CIRound, at time.Time) {
			t.Helper()
			if err := SaveCIRound(ctx, s, id, r, at); err != nil {
				t.Fatal(err)
			}
		}
		save(CIRound{Round: 1, Subtask: "S1", Commit: "abc", State: CIRoundPending}, t0)
		save(CIRound{Round: 1, Subtask: "S1", Commit: "abc", State: CIRoundFailed, Failing: []string{"test"}, Log: strings.Repeat("x", MaxCIRoundLog+10)}, t0.Add(time.Minute))
		// A retried reading after the verdict changes nothing.
		save(CIRound{Round: 1, Subtask: "S1", Commit: "abc", State: CIRoundPassed}, t0.Add(2*time.Minute))
		save(CIRound{Round: 2, Subtask: "S1", Commit: "def", State: CIRoundPending}, t0.Add(3*time.Minute))
		rs, err := CIRounds(ctx, s, id)
		if err != nil || len(rs) != 2 {
			t.Fatalf("CIRounds: %+v, %v; want 2 rounds", rs, err)
		}
		r1, r2 := rs[0], rs[1]
		if r1.State != CIRoundFailed || r1.Reads != 2 || !r1.StartedAt.Equal(t0) || !r1.FinishedAt.Equal(t0.Add(time.Minute)) || len(r1.Failing) != 1 {
			t.Errorf("round 1 = %+v; want failed after 2 reads, started at t0, finished a minute later", r1)
		}
		if len(r1.Log) > MaxCIRoundLog+len("…") || !strings.HasPrefix(r1.Log, "…") {
			t.Errorf("round 1 log has %d bytes; want its last %d after an ellipsis", len(r1.Log), MaxCIRoundLog)
		}
		if r2.State != CIRoundPending || r2.Finished() || !r2.FinishedAt.IsZero() || r2.Commit != "def" {
			t.Errorf("round 2 = %+v; want pending on def", r2)
		}
		var inv *InvalidError
		if err := SaveCIRound(ctx, s, id, CIRound{State: CIRoundPassed}, t0); !errors.As(err, &inv) || inv.Field != "round" {
			t.Errorf("round 0: err = %v, want an InvalidError on round", err)
		}
		for i := 3; i <= MaxCIRounds+5; i++ {
			save(CIRound{Round: i, Commit: "c", State: CIRoundPassed}, t0)
		}
		if rs, _ := CIRounds(ctx, s, id); len(rs) != MaxCIRounds || rs[0].Round != 6 {
			t.Errorf("after %d rounds: %d kept, first %d; want the last %d", MaxCIRounds+5, len(rs), rs[0].Round, MaxCIRounds)
		}
	})
}
