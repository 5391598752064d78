package ssot

import (
	"context"
	"testing"
	"time"
)

func TestRunnerSpendSince(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		midnight := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
		e := func(role string, run int, at time.Duration, cost float64) TranscriptEntry {
			return TranscriptEntry{Role: role, Run: run, At: midnight.Add(at), Kind: TranscriptUsage, CostUSD: cost}
		}
		// T1's executor run 1 spans midnight: $1 before, $1.50 at its end.
		// Run 2 is today's only. The reviewer ran yesterday only; a note
		// (run 0) counts for nothing.
		if _, err := s.AppendTranscript(ctx, "T-2026-001", []TranscriptEntry{
			e("executor", 1, -time.Hour, 0.4), e("executor", 1, -time.Minute, 1), e("executor", 1, time.Minute, 1.25), e("executor", 1, time.Hour, 1.5),
			e("reviewer", 1, -2*time.Hour, 3), e("executor", 0, 2*time.Hour, 9),
			e("executor", 2, 3*time.Hour, 0.25),
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendTranscript(ctx, "T-2026-002", []TranscriptEntry{e("reviewer", 1, time.Hour, 0.75), e("executor", 1, time.Hour, 0.125)}); err != nil {
			t.Fatal(err)
		}
		got, err := s.RunnerSpendSince(ctx, midnight)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{"executor": 0.5 + 0.25 + 0.125, "reviewer": 0.75}
		for role, usd := range want {
			if d := got[role] - usd; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s spent %v since midnight, want %v (all: %v)", role, got[role], usd, got)
			}
		}
		if len(got) != len(want) {
			t.Errorf("spend %v, want only %v", got, want)
		}
	})
}
