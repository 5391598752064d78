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
	if err := d.sandbox(ctx, a, amp.RoleExecutor, repo, dir, &spec); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(data, "homes", "executor")
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
	if err := d.sandbox(ctx, a, amp.RoleReviewer, repo, dir, &spec); err != nil {
		t.Fatalf("a run whose env sets HOME after the worker's: %v", err)
	}
	if got, _ := lookupEnv(spec.Env, "HOME"); got != own || !slices.Contains(spec.Sandbox.Write, own) {
		t.Errorf("HOME = %q, Write = %v; want the HOME the role's env sets, writable", got, spec.Sandbox.Write)
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
