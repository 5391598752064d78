package activities

import (
	"context"
	"strings"
	"testing"
)

// TestCheckResultPinnedBase: the default branch's head recorded when the
// plan was approved is the diff's base. Moving main over the executor's
// first commit hides nothing, and a branch that no longer descends from
// the base is refused.
func TestCheckResultPinnedBase(t *testing.T) {
	repo := newRepo(t, "main")
	commitFiles(t, repo, "m1", map[string]string{"m.txt": "m\n"})
	initial := gitT(t, repo, "rev-parse", "HEAD~1")
	gitT(t, repo, "checkout", "-q", "-b", "feature/p")
	br, err := (&Git{}).CheckBranch(context.Background(), CheckBranchInput{Repo: repo, Branch: "feature/p"})
	if err != nil {
		t.Fatal(err)
	}
	base := br.DefaultHead
	if base != gitT(t, repo, "rev-parse", "main") {
		t.Fatalf("DefaultHead = %q, want main's head", base)
	}
	first := commitFiles(t, repo, "hidden", map[string]string{"a.txt": "a\n"})
	head := commitFiles(t, repo, "shown", map[string]string{"b.txt": "b\n"})
	// The executor moves local main over its first commit.
	gitT(t, repo, "branch", "-f", "main", first)
	in := CheckResultInput{TaskID: "T-2026-010", MsgID: "task_result-T-2026-010-1", Repo: repo, Branch: "feature/p",
		DefaultBranch: "main", Claimed: diffSum([]string{"b.txt"}, 1, 0)}

	t.Run("Unpinned", func(t *testing.T) {
		out, err := (&Git{}).CheckResult(context.Background(), in)
		if err != nil || out.Commit != head || len(out.Mismatches) != 0 {
			t.Fatalf("without a pinned base the move hides a.txt, as before: %+v %v", out, err)
		}
	})
	t.Run("MovedMainHidesNothing", func(t *testing.T) {
		in := in
		in.Base = base
		out, err := (&Git{}).CheckResult(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if out.Violation != "" || strings.Join(out.Actual.FilesChanged, ",") != "a.txt,b.txt" ||
			!strings.Contains(strings.Join(out.Mismatches, "\n"), "git diff shows a.txt, not claimed") {
			t.Errorf("got %+v, want a.txt in the diff and flagged", out)
		}
	})
	t.Run("NotDescending", func(t *testing.T) {
		gitT(t, repo, "checkout", "-q", "-b", "feature/r", initial)
		commitFiles(t, repo, "rebased", map[string]string{"r.txt": "r\n"})
		in := CheckResultInput{TaskID: "T-2026-010", MsgID: "task_result-T-2026-010-2", Repo: repo, Branch: "feature/r",
			DefaultBranch: "main", Claimed: diffSum([]string{"r.txt"}, 1, 0), Base: base}
		out, err := (&Git{}).CheckResult(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.Violation, "does not descend from "+short(base)) {
			t.Errorf("violation %q, want the branch refused", out.Violation)
		}
	})
}
