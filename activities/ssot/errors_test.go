package ssot

import (
	"context"
	"strings"
	"testing"
)

// Refused input is kept within its bounds: the raw input cut at
// MaxErrorRaw, the oldest refusals pruned past the number kept.
func TestErrorsBounded(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		keep, every := keepErrors, pruneErrorsEvery
		keepErrors, pruneErrorsEvery = 5, 4
		t.Cleanup(func() { keepErrors, pruneErrorsEvery = keep, every })
		ctx := context.Background()
		big := strings.Repeat("x", MaxErrorRaw+100)
		if err := s.AppendError(ctx, ErrorEntry{Source: "http", Reason: "too big", Raw: big}); err != nil {
			t.Fatal(err)
		}
		for i := range 11 {
			if err := s.AppendError(ctx, ErrorEntry{Source: "http", Reason: "refused", Raw: string(rune('a' + i))}); err != nil {
				t.Fatal(err)
			}
		}
		errs, _, err := s.Errors(ctx, Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		// 12 kept, pruned at seq 4 (none older than 0), 8 (up to 3) and 12
		// (up to 7): seq 8..12 remain.
		if len(errs) != 5 || errs[0].Seq != 8 {
			t.Fatalf("kept %d refusals from #%d, want 5 from #8", len(errs), errs[0].Seq)
		}
	})
}

func TestErrorRawCut(t *testing.T) {
	eachEngine(t, func(t *testing.T, s *DB, _ string) {
		ctx := context.Background()
		big := strings.Repeat("y", MaxErrorRaw+100)
		if err := s.AppendError(ctx, ErrorEntry{Source: "http", Reason: "too big", Raw: big}); err != nil {
			t.Fatal(err)
		}
		errs, _, err := s.Errors(ctx, Page{})
		if err != nil || len(errs) != 1 {
			t.Fatal(errs, err)
		}
		if n := len(errs[0].Raw); n > MaxErrorRaw+64 || !strings.HasSuffix(errs[0].Raw, "bytes in all)") {
			t.Errorf("raw kept %d bytes ending %q, want it cut at %d and say so", n, errs[0].Raw[max(0, n-30):], MaxErrorRaw)
		}
	})
}
