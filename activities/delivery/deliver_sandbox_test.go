package delivery

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/gittest"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// TestSandboxOfARun: a run's sandbox hides data_dir and the worker's
// home; a run whose HOME is the worker's gets a home of its role's own in
// data_dir/homes, writable; the park directory is writable and the
// repository's objects, which the run's checkout shares, readable; and the worker's HOME, which the base
// environment names before the role's env, does not make the sandbox
// refuse to start.
func TestSandboxOfARun(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	repo := gittest.NewRepo(t, "main")
	dir := filepath.Join(data, "worktrees", "T-2026-001")
	if err := runner.AddTaskWorktree(ctx, repo, dir, "feature/x"); err != nil {
		t.Fatal(err)
	}
	workerHome, _ := os.UserHomeDir()
	a := activities.AgentDelivery{Mode: "runner", Runner: "claude", WorkDir: data, Sandbox: true}
	d := &Delivery{}

	spec := runner.Spec{Runner: "claude", Dir: dir, Env: child.Env(nil, nil), ParkFile: filepath.Join(data, "parks", "p.json")}
	if err := d.sandbox(ctx, a, amp.RoleExecutor, "T-2026-001", repo, dir, &spec); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(data, "homes", "T-2026-001.executor")
	if got, _ := lookupEnv(spec.Env, "HOME"); got != home {
		t.Errorf("HOME = %q, want the role's own %s", got, home)
	}
	b := spec.Sandbox
	if !slices.Contains(b.Hide, data) || (workerHome != "" && !slices.Contains(b.Hide, workerHome)) {
		t.Errorf("Hide = %v, want data_dir and the worker's home", b.Hide)
	}
	for _, w := range []string{home, filepath.Join(data, "parks")} {
		if !slices.Contains(b.Write, w) {
			t.Errorf("Write = %v, want %s", b.Write, w)
		}
	}
	// The checkout is a clone: the repository's objects are read, its git
	// directory is not written.
	objects, _ := filepath.EvalSymlinks(filepath.Join(repo, ".git", "objects"))
	if slices.Contains(b.Write, filepath.Join(repo, ".git")) || !slices.ContainsFunc(b.Read, func(r string) bool {
		real, _ := filepath.EvalSymlinks(r)
		return real == objects
	}) {
		t.Errorf("Write = %v, Read = %v; want the repository's objects read only", b.Write, b.Read)
	}

	own := t.TempDir()
	spec = runner.Spec{Runner: "claude", Dir: dir, Env: child.Env(nil, []string{"HOME=" + own})}
	if err := d.sandbox(ctx, a, amp.RoleReviewer, "T-2026-001", repo, dir, &spec); err != nil {
		t.Fatalf("a run whose env sets HOME after the worker's: %v", err)
	}
	runHome := filepath.Join(data, "homes", "T-2026-001.reviewer")
	if got, _ := lookupEnv(spec.Env, "HOME"); got != runHome || !slices.Contains(spec.Sandbox.Write, runHome) || slices.Contains(spec.Sandbox.Write, own) {
		t.Errorf("HOME = %q, Write = %v; want the run's own copy of the HOME the role's env sets, writable, and that HOME not", got, spec.Sandbox.Write)
	}
	n := 0
	for _, kv := range spec.Env {
		if len(kv) > 5 && kv[:5] == "HOME=" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the run's environment names HOME %d times", n)
	}
}

// TestFreshHome: each run's HOME is a fresh copy of the HOME the role's
// env names (its CODEX_HOME too): a setting a run wrote there is gone in
// the next run, of the task or another, and so is any other file it
// left; the CLI's session store is kept for the task's next run, and
// never copied from the template.
func TestFreshHome(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	repo := gittest.NewRepo(t, "main")
	dir := filepath.Join(data, "worktrees", "T-2026-001")
	if err := runner.AddTaskWorktree(ctx, repo, dir, "feature/x"); err != nil {
		t.Fatal(err)
	}
	template := t.TempDir()
	writeTestFile(t, filepath.Join(template, "codex", "config.toml"), "model = \"m\"\n")
	writeTestFile(t, filepath.Join(template, "codex", "sessions", "template.jsonl"), "not the run's")
	writeTestFile(t, filepath.Join(template, ".gitconfig"), "[user]\n")
	a := activities.AgentDelivery{Mode: "runner", Runner: "codex", WorkDir: data, Sandbox: true}
	d := &Delivery{}
	run := func(taskID string) (home, codexHome string) {
		spec := runner.Spec{Runner: "codex", Dir: dir, Env: child.Env(nil, []string{"HOME=" + template, "CODEX_HOME=" + filepath.Join(template, "codex")})}
		if err := d.sandbox(ctx, a, amp.RoleExecutor, taskID, repo, dir, &spec); err != nil {
			t.Fatal(err)
		}
		home, _ = lookupEnv(spec.Env, "HOME")
		codexHome, _ = lookupEnv(spec.Env, "CODEX_HOME")
		return home, codexHome
	}
	home, codexHome := run("T-2026-001")
	if codexHome != filepath.Join(home, "codex") {
		t.Fatalf("CODEX_HOME = %s, want the run's own under its HOME %s", codexHome, home)
	}
	if b, err := os.ReadFile(filepath.Join(codexHome, "config.toml")); err != nil || string(b) != "model = \"m\"\n" {
		t.Errorf("the template's config.toml was not copied: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(codexHome, "sessions", "template.jsonl")); err == nil {
		t.Error("the template's sessions were copied into the run's")
	}
	// The run switches Codex's hooks off, leaves a file, and keeps a
	// session.
	writeTestFile(t, filepath.Join(codexHome, "config.toml"), "[features]\nhooks = false\n")
	writeTestFile(t, filepath.Join(home, "left-behind"), "x")
	writeTestFile(t, filepath.Join(codexHome, "sessions", "2026", "s1.jsonl"), "session")

	home, codexHome = run("T-2026-001")
	if b, _ := os.ReadFile(filepath.Join(codexHome, "config.toml")); string(b) != "model = \"m\"\n" {
		t.Errorf("the next run's config.toml is %q: what the run wrote carried over", b)
	}
	if _, err := os.Stat(filepath.Join(home, "left-behind")); err == nil {
		t.Error("a file the run left in its HOME carried into the next run")
	}
	if b, err := os.ReadFile(filepath.Join(codexHome, "sessions", "2026", "s1.jsonl")); err != nil || string(b) != "session" {
		t.Errorf("the task's session was not kept for --resume: %q %v", b, err)
	}
	other, _ := run("T-2026-002")
	if _, err := os.Stat(filepath.Join(other, "codex", "sessions", "2026", "s1.jsonl")); err == nil || other == home {
		t.Error("another task's run got this task's HOME or sessions")
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
