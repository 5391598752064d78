package activities

import (
	"context"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
)

// TestCheckResultPinnedBase: the default branch's head recorded when the
// plan was approved is the diff's base. Moving main over the executor's
// first commit hides nothing, and a branch that no longer descends from
// the base is refused.
func TestCheckResultPinnedBase(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	gittest.CommitFiles(t, repo, "m1", map[string]string{"m.txt": "m\n"})
	initial := gittest.Git(t, repo, "rev-parse", "HEAD~1")
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/p")
	br, err := (&Git{}).CheckBranch(context.Background(), CheckBranchInput{Repo: repo, Branch: "feature/p"})
	if err != nil {
		t.Fatal(err)
	}
	base := br.DefaultHead
	if base != gittest.Git(t, repo, "rev-parse", "main") {
		t.Fatalf("DefaultHead = %q, want main's head", base)
	}
	first := gittest.CommitFiles(t, repo, "hidden", map[string]string{"a.txt": "a\n"})
	head := gittest.CommitFiles(t, repo, "shown", map[string]string{"b.txt": "b\n"})
	// The executor moves local main over its first commit.
	gittest.Git(t, repo, "branch", "-f", "main", first)
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
		gittest.Git(t, repo, "checkout", "-q", "-b", "feature/r", initial)
		gittest.CommitFiles(t, repo, "rebased", map[string]string{"r.txt": "r\n"})
		in := CheckResultInput{TaskID: "T-2026-010", MsgID: "task_result-T-2026-010-2", Repo: repo, Branch: "feature/r",
			DefaultBranch: "main", Claimed: diffSum([]string{"r.txt"}, 1, 0), Base: base}
		out, err := (&Git{}).CheckResult(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.Violation, "does not descend from "+ShortHash(base)) {
			t.Errorf("violation %q, want the branch refused", out.Violation)
		}
	})
}

// TestCheckResultPinnedBranches: with a pinned base the usual result is
// placed on its branches without for-each-ref --contains; every case that
// is not the usual one must still be refused as before.
func TestCheckResultPinnedBranches(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	base := gittest.Git(t, repo, "rev-parse", "HEAD")
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/p")
	first := gittest.CommitFiles(t, repo, "first", map[string]string{"p.txt": "p\n"})
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/ahead")
	ahead := gittest.CommitFiles(t, repo, "ahead", map[string]string{"q.txt": "q\n"})
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/merged")
	merged := gittest.CommitFiles(t, repo, "merged", map[string]string{"m.txt": "m\n"})
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/at-base", base)
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/other", base)
	other := gittest.CommitFiles(t, repo, "other", map[string]string{"o.txt": "o\n"})

	bin, calls := countingGit(t)
	cases := []struct {
		name, branch, commit, want string
		mainAt                     string
		contains                   bool // for-each-ref --contains must run
	}{
		{"Usual", "feature/p", first, "", base, false},
		{"CommitIsBase", "feature/at-base", base, "the executor made no commit on feature/at-base", base, true},
		{"BehindItsBranch", "feature/ahead", first, "", base, true},
		{"OnAnotherBranch", "feature/p", ahead, "not on branch feature/p of " + repo + "; it is on feature/ahead, feature/merged", base, true},
		{"MergedIntoMain", "feature/merged", merged, "protected branch main", merged, true},
		{"MainMovedOverIt", "feature/p", first, "protected branch main", ahead, true},
		{"MainMovedElsewhere", "feature/p", first, "", other, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gittest.Git(t, repo, "update-ref", "refs/heads/main", tc.mainAt)
			calls()
			out, err := (&Git{Bin: bin}).CheckResult(context.Background(), CheckResultInput{TaskID: "T-2026-011", MsgID: "m",
				Repo: repo, Branch: tc.branch, Commit: tc.commit, DefaultBranch: "main", Base: base})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && out.Violation != "" || !strings.Contains(out.Violation, tc.want) {
				t.Errorf("violation %q, want %q", out.Violation, tc.want)
			}
			if out.NoCommit != (tc.name == "CommitIsBase") {
				t.Errorf("NoCommit = %v", out.NoCommit)
			}
			ran := strings.Contains(strings.Join(calls(), "\n"), "--contains")
			if ran != tc.contains {
				t.Errorf("for-each-ref --contains ran: %v, want %v", ran, tc.contains)
			}
		})
	}
	t.Run("Pushed", func(t *testing.T) {
		// Whether origin has the commit decides the diff's URL.
		gittest.Git(t, repo, "update-ref", "refs/heads/main", base)
		gittest.Git(t, repo, "update-ref", "refs/remotes/origin/feature/p", first)
		calls()
		out, err := (&Git{Bin: bin}).CheckResult(context.Background(), CheckResultInput{TaskID: "T-2026-011", MsgID: "m",
			Repo: repo, Branch: "feature/p", Commit: first, DefaultBranch: "main", Base: base, GitHubRepo: "github.com/acme/widget"})
		if want := "https://github.com/acme/widget/compare/" + base + "..." + first; err != nil || out.DiffURL != want {
			t.Errorf("DiffURL = %q, %v; want %q", out.DiffURL, err, want)
		}
		if !strings.Contains(strings.Join(calls(), "\n"), "--contains") {
			t.Errorf("for-each-ref --contains did not run with origin's branches present")
		}
	})
}
