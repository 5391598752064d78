package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
)

// A diff past Git.MaxDiff is not read whole: the result is flagged as too
// large to check instead.
func TestCheckResultDiffTooLarge(t *testing.T) {
	r := buildFeatureRepo(t)
	store := newSSOT(t)
	check := func(t *testing.T, maxDiff int64, msgID string) CheckResultOutput {
		t.Helper()
		g := &Git{Diffs: store, MaxDiff: maxDiff}
		out, err := g.CheckResult(context.Background(), CheckResultInput{TaskID: "T-2026-001", MsgID: msgID, Repo: r.dir,
			Branch: "feature/x", Commit: r.feature[:7], Claimed: claimedOf(r.featureSum)})
		if err != nil {
			t.Fatalf("CheckResult with MaxDiff %d: %v", maxDiff, err)
		}
		return out
	}
	notes := func(out CheckResultOutput, what string) int {
		n := 0
		for _, m := range out.Mismatches {
			if strings.HasPrefix(m, what+": too large to check") {
				n++
			}
		}
		return n
	}
	t.Run("Patch", func(t *testing.T) {
		// The numstat fits, the patch (with a binary file) does not.
		out := check(t, 200, "task_result-T-2026-001-7")
		if out.Actual.LinesAdded != 11 || notes(out, "diff_summary") != 0 {
			t.Errorf("the diff_summary was not checked: %+v", out)
		}
		if notes(out, "diff") != 1 || out.DiffURL != "" {
			t.Errorf("mismatches %q, DiffURL %q; want the diff noted as too large and not kept", out.Mismatches, out.DiffURL)
		}
		if _, err := store.Store.File(context.Background(), "T-2026-001", ssot.DiffName("task_result-T-2026-001-7")); err == nil {
			t.Errorf("a cut diff was kept")
		}
	})
	t.Run("Numstat", func(t *testing.T) {
		out := check(t, 16, "task_result-T-2026-001-8")
		if notes(out, "diff_summary") != 1 || notes(out, "diff") != 1 || len(out.Mismatches) != 2 {
			t.Errorf("mismatches %q; want only the two too-large notes", out.Mismatches)
		}
	})
	t.Run("UnderTheCap", func(t *testing.T) {
		out := check(t, 0, "task_result-T-2026-001-9")
		if len(out.Mismatches) != 0 || out.DiffURL == "" {
			t.Errorf("with the default cap: %+v", out)
		}
	})
}
