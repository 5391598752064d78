package activities

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
)

// countingGit writes a git wrapper that logs each call's arguments, one
// line per process, before running the real git. calls returns the lines
// logged since the previous call.
func countingGit(t *testing.T) (bin string, calls func() []string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the counting wrapper is a shell script")
	}
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	if strings.ContainsRune(real+log, '\'') {
		t.Skip("a path holds a quote")
	}
	bin = filepath.Join(dir, "git")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	seen := 0
	return bin, func() []string {
		b, err := os.ReadFile(log)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(b) == 0 {
			all = nil
		}
		got := all[seen:]
		seen = len(all)
		return got
	}
}

// TestGitProcessCounts holds the git checks to the processes they spawn on
// a repository like the benchmark's: main with one commit, a feature
// branch with one more, no origin.
func TestGitProcessCounts(t *testing.T) {
	repo := gittest.NewRepo(t, "main")
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/bench")
	commit := gittest.CommitFiles(t, repo, "bench", map[string]string{"bench.txt": "one\ntwo\nthree\n"})
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, filepath.Dir(clone), "clone", "-q", "--branch", "main", repo, clone)
	gittest.Git(t, clone, "remote", "set-head", "origin", "main")
	// Other tasks' branches: the checks read the refs they need by name,
	// and list none of these.
	var others strings.Builder
	for i := range 300 {
		fmt.Fprintf(&others, "create refs/heads/task/%d %s\n", i, commit)
	}
	update := exec.Command("git", "update-ref", "--stdin")
	update.Dir, update.Stdin = repo, strings.NewReader(others.String())
	if out, err := update.CombinedOutput(); err != nil {
		t.Fatalf("git update-ref: %v: %s", err, out)
	}

	bin, calls := countingGit(t)
	g := &Git{Bin: bin, Diffs: newSSOT(t)}
	ctx := context.Background()
	check := func(t *testing.T, name string, max int) {
		t.Helper()
		got := calls()
		t.Logf("%s: %d git processes:\n\t%s", name, len(got), strings.Join(got, "\n\t"))
		if len(got) > max {
			t.Errorf("%s ran %d git processes, want at most %d", name, len(got), max)
		}
		for _, call := range got {
			if strings.Contains(call, " for-each-ref ") && !strings.Contains(call, " --contains ") {
				t.Errorf("%s listed every branch: git %s", name, call)
			}
		}
	}

	t.Run("CheckBranch", func(t *testing.T) {
		res, err := g.CheckBranch(ctx, CheckBranchInput{Repo: repo, Branch: "feature/bench"})
		if err != nil || res.Head != commit || res.DefaultBranch != "main" {
			t.Fatalf("got %+v, %v", res, err)
		}
		// git config (origin's URL and init.defaultBranch), and the
		// repository's batch starting (git_batch.go): refs are read there.
		check(t, "CheckBranch", 2)
		if _, err := g.CheckBranch(ctx, CheckBranchInput{Repo: repo, Branch: "feature/bench"}); err != nil {
			t.Fatal(err)
		}
		// The configuration is kept while its files are as they were
		// (git_config.go), and the batch is up.
		check(t, "CheckBranch again", 0)
	})
	t.Run("CheckBranchOriginHead", func(t *testing.T) {
		res, err := g.CheckBranch(ctx, CheckBranchInput{Repo: clone, Branch: "feature/bench"})
		if err != nil || res.Head != commit || res.DefaultBranch != "main" {
			t.Fatalf("got %+v, %v", res, err)
		}
		// git config reads origin's URL, which the task keeps as its
		// GitHub repository; the clone's batch starts; symbolic-ref reads
		// the branch origin/HEAD names.
		check(t, "CheckBranch with origin/HEAD", 3)
	})
	in := CheckResultInput{TaskID: "T-2026-001", MsgID: "task_result-T-2026-001-1", Repo: repo, Branch: "feature/bench",
		Commit: commit, DefaultBranch: "main", Claimed: diffSum([]string{"bench.txt"}, 3, 0)}
	t.Run("CheckResult", func(t *testing.T) {
		out, err := g.CheckResult(ctx, in)
		if err != nil || out.Violation != "" || len(out.Mismatches) != 0 || out.DiffURL == "" {
			t.Fatalf("got %+v, %v", out, err)
		}
		// merge-base with main, for-each-ref --contains, git diff.
		check(t, "CheckResult", 3)
	})
	t.Run("CheckResultPinned", func(t *testing.T) {
		// The benchmark's shape: the plan's approval pinned main's head.
		in := in
		in.Base = gittest.Git(t, repo, "rev-parse", "main")
		out, err := g.CheckResult(ctx, in)
		if err != nil || out.Violation != "" || len(out.Mismatches) != 0 || out.DiffURL == "" {
			t.Fatalf("got %+v, %v", out, err)
		}
		// Only git diff: the commit's place is read through the batch.
		check(t, "CheckResult with a pinned base", 1)
	})
	t.Run("CheckResultNoDefault", func(t *testing.T) {
		in := in
		in.DefaultBranch = ""
		out, err := g.CheckResult(ctx, in)
		if err != nil || out.Violation != "" || len(out.Mismatches) != 0 || out.DiffURL == "" {
			t.Fatalf("got %+v, %v", out, err)
		}
		check(t, "CheckResult without the default branch", 4)
	})
}
