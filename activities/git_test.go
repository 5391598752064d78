package activities

import (
	"context"
	"errors"

	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
)

// featureRepo is main with a later commit, and feature/x branched before
// it with two commits: 3 files, 5+2+... lines as built below.
type featureRepo struct {
	dir        string
	feature    string // head of feature/x
	firstOnFx  string // first commit of feature/x
	mainHead   string
	otherHead  string // head of feature/other
	forkPoint  string
	featureSum featureSum
}

type featureSum struct {
	files        []string
	added, remov int
}

func buildFeatureRepo(t *testing.T) featureRepo {
	t.Helper()
	r := featureRepo{dir: gittest.NewRepo(t, "main")}
	r.forkPoint = gittest.Git(t, r.dir, "rev-parse", "HEAD")
	gittest.Git(t, r.dir, "checkout", "-q", "-b", "feature/x")
	r.firstOnFx = gittest.CommitFiles(t, r.dir, "engine", map[string]string{"Sources/BreathEngine.swift": gittest.Lines(10, "let a = 1")})
	if err := os.WriteFile(filepath.Join(r.dir, "logo.png"), []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, r.dir, "add", "logo.png")
	r.feature = gittest.CommitFiles(t, r.dir, "core", map[string]string{"lib/core.go": "package lib\n\nfunc B() {}\n"})
	r.featureSum = featureSum{files: []string{"Sources/BreathEngine.swift", "lib/core.go", "logo.png"}, added: 11, remov: 1}
	gittest.Git(t, r.dir, "checkout", "-q", "-b", "feature/other", "main")
	r.otherHead = gittest.CommitFiles(t, r.dir, "other", map[string]string{"other.txt": "x\n"})
	gittest.Git(t, r.dir, "checkout", "-q", "main")
	r.mainHead = gittest.CommitFiles(t, r.dir, "main moves on", map[string]string{"README.md": gittest.Lines(5, "more")})
	gittest.Git(t, r.dir, "checkout", "-q", "feature/x")
	return r
}

func TestCheckBranch(t *testing.T) {
	r := buildFeatureRepo(t)
	gittest.Git(t, r.dir, "branch", "master", "main")
	plain := t.TempDir()
	sub := filepath.Join(r.dir, "Sources")

	// A clone: feature/x and feature/other only on origin; origin/HEAD set.
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, filepath.Dir(clone), "clone", "-q", "--branch", "main", r.dir, clone)
	gittest.Git(t, clone, "remote", "set-head", "origin", "main")

	// trunk as the default branch, locally and through origin/HEAD.
	trunk := gittest.NewRepo(t, "trunk")
	gittest.Git(t, trunk, "branch", "feature/y")
	trunkClone := filepath.Join(t.TempDir(), "trunkclone")
	gittest.Git(t, filepath.Dir(trunkClone), "clone", "-q", trunk, trunkClone)
	gittest.Git(t, trunkClone, "checkout", "-q", "-b", "work")
	trunkHead := gittest.Git(t, trunk, "rev-parse", "trunk")
	// Nothing tells the default of this one but HEAD, which is on the
	// branch asked about: refused, failing closed.
	guess := gittest.NewRepo(t, "trunk")
	gittest.Git(t, guess, "checkout", "-q", "-b", "feature/z")

	tests := []struct {
		name     string
		repo     string
		branch   string
		wantErr  string
		wantDef  string
		wantHead string
	}{
		{"Feature", r.dir, "feature/x", "", "main", r.feature},
		{"FeatureRefsHeads", r.dir, "refs/heads/feature/x", "", "main", r.feature},
		{"Main", r.dir, "main", ErrProtectedBranch, "", ""},
		{"Master", r.dir, "master", ErrProtectedBranch, "", ""},
		{"Missing", r.dir, "feature/nope", ErrBranchMissing, "", ""},
		{"Empty", r.dir, "", ErrBranchMissing, "", ""},
		{"OptionLike", r.dir, "--all", ErrBranchMissing, "", ""},
		{"NotARepo", plain, "feature/x", ErrNotWorkTree, "", ""},
		{"NoSuchDir", filepath.Join(plain, "nope"), "feature/x", ErrNotWorkTree, "", ""},
		{"SubdirOfRepo", sub, "feature/x", ErrNotWorkTree, "", ""},
		{"OnlyOnOrigin", clone, "feature/other", "", "main", r.otherHead},
		{"TrunkLocal", trunk, "trunk", ErrProtectedBranch, "", ""},
		{"TrunkLocalFeature", trunk, "feature/y", "", "trunk", trunkHead},
		{"TrunkOriginHead", trunkClone, "trunk", ErrProtectedBranch, "", ""},
		{"TrunkCloneWork", trunkClone, "work", "", "trunk", trunkHead},
		{"HeadGuessFailsClosed", guess, "feature/z", ErrProtectedBranch, "", ""},
	}
	g := &Git{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := g.CheckBranch(context.Background(), CheckBranchInput{Repo: tc.repo, Branch: tc.branch})
			if tc.wantErr != "" {
				ae := appErr(t, err, tc.wantErr, true)
				if !strings.Contains(ae.Error(), tc.repo) {
					t.Errorf("message %q does not name the repository %s", ae.Error(), tc.repo)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.DefaultBranch != tc.wantDef || res.Head != tc.wantHead {
				t.Errorf("got %+v, want default %q head %q", res, tc.wantDef, tc.wantHead)
			}
		})
	}
}

func TestCheckResult(t *testing.T) {
	r := buildFeatureRepo(t)
	store := newSSOT(t)
	store.APIURL = "http://127.0.0.1:7480/"
	g := &Git{Diffs: store}

	t.Run("Honest", func(t *testing.T) {
		claimed := claimedOf(r.featureSum)
		claimed.FilesChanged = []string{"./Sources/BreathEngine.swift", "lib/core.go", "logo.png"}
		out, err := g.CheckResult(context.Background(), CheckResultInput{TaskID: "T-2026-001", MsgID: "task_result-T-2026-001-1", Repo: r.dir, Branch: "feature/x", Commit: r.feature[:7], Claimed: claimed})
		if err != nil {
			t.Fatal(err)
		}
		if out.Commit != r.feature || out.Violation != "" || len(out.Mismatches) != 0 {
			t.Fatalf("got %+v", out)
		}
		if strings.Join(out.Actual.FilesChanged, ",") != strings.Join(r.featureSum.files, ",") || out.Actual.LinesAdded != 11 || out.Actual.LinesRemoved != 1 {
			t.Errorf("actual = %+v, want %+v (main's later commit must not count)", out.Actual, r.featureSum)
		}
		want := "http://127.0.0.1:7480/v1/tasks/T-2026-001/diffs/task_result-T-2026-001-1"
		if out.DiffURL != want {
			t.Fatalf("DiffURL = %q, want %q (origin is not GitHub)", out.DiffURL, want)
		}
		diff, err := store.Store.File(context.Background(), "T-2026-001", ssot.DiffName("task_result-T-2026-001-1"))
		if err != nil || !strings.Contains(string(diff), "+++ b/Sources/BreathEngine.swift") || strings.Contains(string(diff), "more") {
			t.Errorf("diff file: %v\n%s", err, diff)
		}
	})

	t.Run("Lying", func(t *testing.T) {
		claimed := diffSum([]string{"Sources/BreathEngine.swift", "Foo.swift"}, 68, 24)
		out, err := g.CheckResult(context.Background(), CheckResultInput{TaskID: "T-2026-001", MsgID: "task_result-T-2026-001-2", Repo: r.dir, Branch: "feature/x", Claimed: claimed})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"files_changed: claimed Foo.swift not in git diff",
			"files_changed: git diff shows lib/core.go, not claimed",
			"files_changed: git diff shows logo.png, not claimed",
			"lines_added: claimed 68, git shows 11",
			"lines_removed: claimed 24, git shows 1",
		}
		if strings.Join(out.Mismatches, "\n") != strings.Join(want, "\n") {
			t.Errorf("mismatches:\n%s\nwant:\n%s", strings.Join(out.Mismatches, "\n"), strings.Join(want, "\n"))
		}
		if out.Commit != r.feature {
			t.Errorf("empty commit_hash should mean the branch head %s, got %s", r.feature, out.Commit)
		}
	})

	violations := []struct {
		name, commit, want string
	}{
		{"CommitOnMain", r.mainHead, "protected branch main"},
		{"ForkPointOnMain", r.forkPoint, "protected branch main"},
		{"CommitOnOtherBranch", r.otherHead, "not on branch feature/x"},
	}
	for _, tc := range violations {
		t.Run(tc.name, func(t *testing.T) {
			out, err := g.CheckResult(context.Background(), CheckResultInput{TaskID: "T-2026-001", MsgID: "task_result-T-2026-001-3", Repo: r.dir, Branch: "feature/x", Commit: tc.commit})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.Violation, tc.want) {
				t.Errorf("violation = %q, want it to mention %q", out.Violation, tc.want)
			}
		})
	}

	errs := []struct {
		name, repo, branch, commit, typ string
	}{
		{"UnknownCommit", r.dir, "feature/x", "deadbeefdeadbeef", ErrCommitMissing},
		{"NotAHash", r.dir, "feature/x", "main", ErrCommitMissing},
		{"MissingBranch", r.dir, "feature/gone", "", ErrBranchMissing},
		// Revision syntax is not read as a branch (feature/x:README.md
		// would name a file of feature/x's tree).
		{"BranchIsAPath", r.dir, "feature/x:README.md", "", ErrBranchMissing},
		{"BranchIsARevision", r.dir, "feature/x~1", "", ErrBranchMissing},
		{"BranchHasANewline", r.dir, "feature/x\nrefs/heads/main", "", ErrBranchMissing},
		{"NotARepo", t.TempDir(), "feature/x", "", ErrNotWorkTree},
		{"NotARepoWithCommit", t.TempDir(), "feature/x", r.feature, ErrNotWorkTree},
		{"SubdirWithCommit", filepath.Join(r.dir, "Sources"), "feature/x", r.feature, ErrNotWorkTree},
		{"GitDirWithCommit", filepath.Join(r.dir, ".git"), "feature/x", r.feature, ErrNotWorkTree},
		{"NoSuchDirWithCommit", filepath.Join(r.dir, "nope"), "feature/x", r.feature, ErrNotWorkTree},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.CheckResult(context.Background(), CheckResultInput{TaskID: "T-2026-001", MsgID: "m", Repo: tc.repo, Branch: tc.branch, Commit: tc.commit})
			appErr(t, err, tc.typ, true)
		})
	}
}

func TestCheckResultGitHubURL(t *testing.T) {
	r := buildFeatureRepo(t)
	store := newSSOT(t)
	g := &Git{Diffs: store}
	in := CheckResultInput{TaskID: "T-2026-002", MsgID: "task_result-T-2026-002-9", Repo: r.dir, Branch: "feature/x", Commit: r.feature}

	for _, remote := range []string{"git@github.com:acme/widget.git", "https://github.com/acme/widget", "ssh://git@github.com/acme/widget.git"} {
		gittest.Git(t, r.dir, "config", "remote.origin.url", remote)
		// The task starts: CheckBranch records the repository.
		started, err := g.CheckBranch(context.Background(), CheckBranchInput{Repo: r.dir, Branch: "feature/x"})
		if err != nil || started.GitHubRepo != "github.com/acme/widget" {
			t.Fatalf("%s: CheckBranch = %+v, %v; want github.com/acme/widget recorded", remote, started, err)
		}
		in.GitHubRepo = started.GitHubRepo
		// Not pushed yet: GitHub cannot show it, so the diff goes to the SSOT.
		out, err := g.CheckResult(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if out.DiffURL != ssot.DiffPath(in.TaskID, in.MsgID) {
			t.Errorf("%s, unpushed: DiffURL = %q, want a file in the SSOT", remote, out.DiffURL)
		}
		gittest.Git(t, r.dir, "update-ref", "refs/remotes/origin/feature/x", r.feature)
		gittest.Git(t, r.dir, "update-ref", "refs/remotes/origin/main", r.mainHead)
		out, err = g.CheckResult(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if want := "https://github.com/acme/widget/compare/main..." + r.feature; out.DiffURL != want {
			t.Errorf("%s: DiffURL = %q, want %q", remote, out.DiffURL, want)
		}
		// origin moved after the start: the URL stays on the recorded one.
		gittest.Git(t, r.dir, "config", "remote.origin.url", "git@github.com:mallory/widget.git")
		out, err = g.CheckResult(context.Background(), in)
		if want := "https://github.com/acme/widget/compare/main..." + r.feature; err != nil || out.DiffURL != want {
			t.Errorf("origin moved to mallory/widget: DiffURL = %q, %v; want %q", out.DiffURL, err, want)
		}
		gittest.Git(t, r.dir, "update-ref", "-d", "refs/remotes/origin/feature/x")
		gittest.Git(t, r.dir, "update-ref", "-d", "refs/remotes/origin/main")
	}
}

func TestCompareDiff(t *testing.T) {
	actual := diffSum([]string{"Sources/WatchApp/BreathEngine.swift", "README.md"}, 12, 3)
	tests := []struct {
		name    string
		claimed []string
		add     int
		rem     int
		want    []string
	}{
		{"Exact", []string{"Sources/WatchApp/BreathEngine.swift", "README.md"}, 12, 3, nil},
		{"BareNameAndDotSlash", []string{"BreathEngine.swift", "./README.md"}, 12, 3, nil},
		{"Extra", []string{"Sources/WatchApp/BreathEngine.swift", "README.md", "Foo.swift"}, 12, 3, []string{"files_changed: claimed Foo.swift not in git diff"}},
		{"Missing", []string{"README.md"}, 12, 3, []string{"files_changed: git diff shows Sources/WatchApp/BreathEngine.swift, not claimed"}},
		{"Counts", []string{"BreathEngine.swift", "README.md"}, 68, 24, []string{"lines_added: claimed 68, git shows 12", "lines_removed: claimed 24, git shows 3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := compareDiff(diffSum(tc.claimed, tc.add, tc.rem), actual)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseNumstat(t *testing.T) {
	got, err := parseNumstat([]byte("3\t1\ta.go\x00-\t-\timg.png\x0010\t0\tdir/b c.txt\x00"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.FilesChanged, ",") != "a.go,img.png,dir/b c.txt" || got.LinesAdded != 13 || got.LinesRemoved != 1 {
		t.Errorf("got %+v", got)
	}
	if _, err := parseNumstat([]byte("x\t1\ta.go\x00")); err == nil {
		t.Error("a bad count must be an error")
	}
}

func diffSum(files []string, added, removed int) amp.DiffSummary {
	return amp.DiffSummary{FilesChanged: files, LinesAdded: added, LinesRemoved: removed}
}

func claimedOf(f featureSum) amp.DiffSummary { return diffSum(f.files, f.added, f.remov) }

func TestCheckResultTrunkDefault(t *testing.T) {
	repo := gittest.NewRepo(t, "trunk")
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/z")
	head := gittest.CommitFiles(t, repo, "z", map[string]string{"z.txt": "z\n"})
	in := CheckResultInput{TaskID: "T-2026-009", MsgID: "task_result-T-2026-009-1", Repo: repo, Branch: "feature/z",
		DefaultBranch: "trunk", Claimed: diffSum([]string{"z.txt"}, 1, 0)}
	out, err := (&Git{}).CheckResult(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Commit != head || out.Violation != "" || len(out.Mismatches) != 0 {
		t.Errorf("with the default branch from CheckBranch: %+v", out)
	}
	in.Commit = gittest.Git(t, repo, "rev-parse", "trunk")
	if out, err = (&Git{}).CheckResult(context.Background(), in); err != nil || !strings.Contains(out.Violation, "protected branch trunk") {
		t.Errorf("a commit on trunk: %+v, %v", out, err)
	}
}

// TestCheckResultClone checks a result in a clone where the task branches
// are only on origin and origin/HEAD names the default branch.
func TestCheckResultClone(t *testing.T) {
	r := buildFeatureRepo(t)
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, filepath.Dir(clone), "clone", "-q", "--branch", "main", r.dir, clone)
	gittest.Git(t, clone, "remote", "set-head", "origin", "main")
	g := &Git{Diffs: newSSOT(t)}
	in := CheckResultInput{TaskID: "T-2026-003", MsgID: "task_result-T-2026-003-1", Repo: clone, Branch: "feature/x", Claimed: claimedOf(r.featureSum)}

	out, err := g.CheckResult(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Commit != r.feature || out.Violation != "" || len(out.Mismatches) != 0 {
		t.Errorf("the head of origin/feature/x: %+v", out)
	}
	for commit, want := range map[string]string{
		r.mainHead:  "protected branch main (refs/heads/main)",
		r.otherHead: "not on branch feature/x",
	} {
		in := in
		in.Commit = commit
		if out, err := g.CheckResult(context.Background(), in); err != nil || !strings.Contains(out.Violation, want) {
			t.Errorf("commit %s: %+v, %v; want a violation with %q", ShortHash(commit), out, err, want)
		}
	}

	// No GitHub repository recorded at the start: the diff goes to the SSOT.
	if out.DiffURL == "" || strings.HasPrefix(out.DiffURL, "https://") {
		t.Errorf("DiffURL = %q with no GitHub repository, want a file in the SSOT", out.DiffURL)
	}
	// Pushed, on GitHub: a compare URL from origin's default branch.
	gittest.Git(t, clone, "config", "remote.origin.url", "git@github.com:acme/widget.git")
	started, err := g.CheckBranch(context.Background(), CheckBranchInput{Repo: clone, Branch: "feature/x"})
	if err != nil {
		t.Fatal(err)
	}
	in.GitHubRepo = started.GitHubRepo
	out, err = g.CheckResult(context.Background(), in)
	if want := "https://github.com/acme/widget/compare/main..." + r.feature; err != nil || out.DiffURL != want {
		t.Errorf("DiffURL = %q, %v; want %q", out.DiffURL, err, want)
	}
}

// TestCheckBranchPrunedOriginHead covers an origin/HEAD whose branch was
// renamed upstream and pruned here: it still names the default branch, so
// the local copy of that branch stays protected.
func TestCheckBranchPrunedOriginHead(t *testing.T) {
	upstream := gittest.NewRepo(t, "develop")
	gittest.CommitFiles(t, upstream, "first", map[string]string{"a.txt": "a\n"})
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, filepath.Dir(clone), "clone", "-q", upstream, clone)
	gittest.Git(t, clone, "remote", "set-head", "origin", "develop")
	gittest.Git(t, upstream, "branch", "-m", "develop", "trunk")
	gittest.Git(t, clone, "fetch", "-q", "--prune", "origin")
	// A main branch here too, so that the fallbacks after origin/HEAD
	// (main, then HEAD's branch) would name main, not develop.
	gittest.Git(t, clone, "checkout", "-q", "-b", "main")
	if out := gittest.Git(t, clone, "for-each-ref", "refs/remotes/origin/HEAD"); out != "" {
		t.Fatalf("origin/HEAD still resolves (%q); the test needs it dangling", out)
	}
	_, err := (&Git{}).CheckBranch(context.Background(), CheckBranchInput{Repo: clone, Branch: "develop"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(err.Error(), ErrProtectedBranch) {
		t.Fatalf("CheckBranch(develop) = %v, want %s: origin/HEAD still names develop", err, ErrProtectedBranch)
	}
}
