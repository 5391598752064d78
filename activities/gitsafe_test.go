package activities

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// plantedCode writes, into repo, every place git finds code to run that an
// executor could write: hooks (in .git/hooks and in a core.hooksPath of
// its own), core.fsmonitor, the filter and diff driver the committed
// .gitattributes picks (evil), core.sshCommand, a credential helper and a
// pager. Each
// writes a file named after itself into the returned directory, with the
// environment it got.
func plantedCode(t *testing.T, repo string) (marks string) {
	t.Helper()
	marks = t.TempDir()
	script := func(name string) string {
		p := filepath.Join(t.TempDir(), name)
		body := "#!/bin/sh\nenv > " + filepath.Join(marks, name) + "\ncat\nexit 0\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hooks := []string{"post-checkout", "pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change", "pre-auto-gc", "pre-push", "post-rewrite"}
	ownHooks := t.TempDir()
	for _, h := range hooks {
		for _, dir := range []string{filepath.Join(repo, ".git", "hooks"), ownHooks} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(script("hook-"+h), filepath.Join(dir, h)); err != nil {
				t.Fatal(err)
			}
		}
	}
	gittest.Git(t, repo, "config", "core.fsmonitor", script("fsmonitor"))
	gittest.Git(t, repo, "config", "filter.evil.clean", script("filter-clean"))
	gittest.Git(t, repo, "config", "filter.evil.smudge", script("filter-smudge"))
	gittest.Git(t, repo, "config", "diff.evil.textconv", script("textconv"))
	gittest.Git(t, repo, "config", "core.sshCommand", script("ssh"))
	gittest.Git(t, repo, "config", "credential.helper", "!"+script("credential"))
	gittest.Git(t, repo, "config", "core.pager", script("pager"))
	gittest.Git(t, repo, "config", "core.hooksPath", ownHooks)
	return marks
}

// marked lists what planted code ran.
func marked(t *testing.T, marks string) []string {
	t.Helper()
	entries, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// TestGitRunsNothingOfTheRepository: every git command ampflow runs in a
// task's repository and in a runner's worktree (the checks, the worktree's
// making and removal, the salvage of uncommitted work, the push) runs none
// of the code the repository names, whatever the worker's environment
// holds. The same commands run by plain git run it, so the planted code
// is live.
func TestGitRunsNothingOfTheRepository(t *testing.T) {
	t.Setenv("AMPFLOW_API_TOKEN", "secret-admin-token")
	ctx := context.Background()
	repo := gittest.NewRepo(t, "main")
	gittest.CommitFiles(t, repo, "attributes", map[string]string{".gitattributes": "* filter=evil diff=evil\n"})
	gittest.Git(t, repo, "checkout", "-q", "-b", "feature/x")
	head := gittest.CommitFiles(t, repo, "work", map[string]string{"lib/x.go": "package lib\n"})
	gittest.Git(t, repo, "checkout", "-q", "main")
	marks := plantedCode(t, repo)
	base := gittest.Git(t, repo, "rev-parse", "main")
	origin := filepath.Join(t.TempDir(), "origin.git")
	gittest.Git(t, repo, "init", "-q", "--bare", origin)

	g := &Git{}
	if _, err := g.CheckBranch(ctx, CheckBranchInput{Repo: repo, Branch: "feature/x"}); err != nil {
		t.Fatalf("CheckBranch: %v", err)
	}
	if _, err := g.CheckResult(ctx, CheckResultInput{TaskID: "T-2026-001", MsgID: "task_result-T-2026-001-1", Repo: repo,
		Branch: "feature/x", Commit: head, DefaultBranch: "main", Base: base}); err != nil {
		t.Fatalf("CheckResult: %v", err)
	}
	wt := WorktreeDir(t.TempDir(), "T-2026-001", amp.RoleExecutor)
	if err := runner.AddTaskWorktree(ctx, repo, wt, "feature/x"); err != nil {
		t.Fatalf("AddTaskWorktree: %v", err)
	}
	if err := os.WriteFile(filepath.Join(wt, "left.txt"), []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The agent writes its checkout's own configuration: a filter whose
	// name holds a no-break space, and a core.worktree naming a secret
	// directory for the salvage to take.
	evil := filepath.Join(t.TempDir(), "evil.sh")
	if err := os.WriteFile(evil, []byte("#!/bin/sh\ntouch "+filepath.Join(marks, "checkout-filter")+"\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, wt, "config", "filter.a\u00a0b.clean", evil)
	if err := os.WriteFile(filepath.Join(wt, ".gitattributes"), []byte("*.txt filter=a\u00a0b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := t.TempDir()
	if err := os.WriteFile(filepath.Join(secrets, "key"), []byte("TOPSECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, wt, "config", "core.worktree", secrets)
	ref, _, err := runner.SalvageTask(ctx, wt, "T-2026-001", "salvage")
	if err != nil || ref == "" {
		t.Fatalf("SalvageTask = %q, %v", ref, err)
	}
	if files := gittest.Git(t, wt, "--work-tree="+wt, "ls-tree", "-r", "--name-only", ref); strings.Contains(files, "key") || !strings.Contains(files, "left.txt") {
		t.Errorf("the salvage holds %q: core.worktree moved it", files)
	}
	if err := runner.RemoveWorktree(ctx, repo, wt); err != nil {
		t.Fatalf("RemoveWorktree: %v", err)
	}
	p := &Pusher{Git: g, Token: "ghs_pushtoken"}
	if _, err := p.Push(ctx, PushInput{TaskID: "T-2026-001", Repo: repo, Branch: "feature/x", Remote: origin, Commit: head}); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if ran := marked(t, marks); len(ran) > 0 {
		leak, _ := os.ReadFile(filepath.Join(marks, ran[0]))
		t.Errorf("ampflow's git ran the repository's %v; %s saw the token: %v", ran, ran[0], strings.Contains(string(leak), "secret-admin-token"))
	}

	// Plain git runs the same planted code.
	plain := exec.Command("git", "status", "--porcelain")
	plain.Dir = repo
	plain.Env = append(os.Environ(), gittest.Env...)
	if out, err := plain.CombinedOutput(); err != nil {
		t.Fatalf("plain git status: %v\n%s", err, out)
	}
	wt2 := filepath.Join(t.TempDir(), "wt2")
	add := exec.Command("git", "worktree", "add", "-q", wt2, "feature/x")
	add.Dir = repo
	add.Env = append(os.Environ(), gittest.Env...)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("plain git worktree add: %v\n%s", err, out)
	}
	ran := strings.Join(marked(t, marks), " ")
	for _, want := range []string{"fsmonitor", "hook-post-checkout", "filter-smudge"} {
		if !strings.Contains(ran, want) {
			t.Errorf("plain git ran %q, not %s: the planted code is not live", ran, want)
		}
	}
}
