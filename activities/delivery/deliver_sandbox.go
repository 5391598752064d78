package delivery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// sandbox confines spec, a run of role on taskID in the worktree dir
// (docs/sandbox.md). The run does not see data_dir nor the worker's home,
// but for what it is given: the tool hook's binary and files, its MCP
// configuration, the CLI's own install, the repository's objects its
// checkout reads. It writes its checkout, its park file's directory, and
// its CLI's state, made fresh for the run (runHome).
func (d *Delivery) sandbox(ctx context.Context, a activities.AgentDelivery, role amp.Role, taskID, repo, dir string, spec *runner.Spec) error {
	// /tmp is the run's own, whatever the worker's TMPDIR.
	spec.Env = lastValues(append(spec.Env, "TMPDIR=/tmp"))
	hide := append([]string{a.WorkDir}, d.SandboxHide...)
	workerHome, _ := os.UserHomeDir()
	if workerHome != "" {
		hide = append(hide, workerHome)
	}
	home, err := d.runHome(a, role, taskID, workerHome, spec)
	if err != nil {
		return err
	}
	write := []string{home}
	// The checkout reads the repository's objects, read-only; where they
	// are is read from the repository, not from the checkout the agent
	// writes.
	objects, err := runner.Objects(ctx, repo)
	if err != nil {
		return fmt.Errorf("finding the objects of %s: %w", repo, err)
	}
	read := []string{objects}
	if spec.ParkFile != "" {
		write = append(write, filepath.Dir(spec.ParkFile))
		if err := os.MkdirAll(filepath.Dir(spec.ParkFile), 0o700); err != nil {
			return fmt.Errorf("making the park directory: %w", err)
		}
	}
	read = append(read, runner.Paths(append(append(append([]string{}, spec.Env...), spec.Args...), spec.Command...)...)...)
	if d.Tools != nil && d.Tools.Binary != "" {
		read = append(append(read, d.Tools.Binaries()...), d.Tools.GeminiSettings, d.Tools.OpenCodePlugin)
	}
	read = append(read, installRoots(spec)...)
	spec.Sandbox = &runner.Sandbox{Bin: d.SandboxBin, Hide: hide, Read: read, Write: write}
	return nil
}

// runHome makes the run's HOME (and CODEX_HOME) in
// data_dir/homes/<task>.<role>, fresh for each run: a copy of the HOME
// the role's env names (its CODEX_HOME too), the CLI's session stores of
// the task's earlier runs of the role kept for --resume, nothing else. A
// setting an agent writes into its HOME reaches no later run, of this
// task or another.
func (d *Delivery) runHome(a activities.AgentDelivery, role amp.Role, taskID, workerHome string, spec *runner.Spec) (string, error) {
	template, ok := lookupEnv(spec.Env, "HOME")
	if !ok || template == workerHome {
		template = ""
	}
	home := filepath.Join(a.WorkDir, "homes", taskID+"."+string(role))
	keep := append([]string{}, sessionStores[spec.Runner]...)
	codexHome, hasCodex := lookupEnv(spec.Env, "CODEX_HOME")
	codexRel := ".codex"
	if hasCodex && template != "" {
		if rel, err := filepath.Rel(template, codexHome); err == nil && !strings.HasPrefix(rel, "..") {
			codexRel = rel
		}
	}
	if hasCodex || spec.Runner == runner.Codex {
		keep = append(keep, filepath.Join(codexRel, codexSessions))
	}
	if err := freshHome(home, template, keep); err != nil {
		return "", fmt.Errorf("the %s's home: %w", role, err)
	}
	spec.Env = setEnv(spec.Env, "HOME="+home)
	if hasCodex {
		if codexRel == ".codex" {
			if err := os.MkdirAll(filepath.Join(home, codexRel), 0o700); err != nil {
				return "", err
			}
			if err := copyTree(codexHome, filepath.Join(home, codexRel), []string{codexSessions}); err != nil {
				return "", fmt.Errorf("the %s's CODEX_HOME: %w", role, err)
			}
		}
		spec.Env = setEnv(spec.Env, "CODEX_HOME="+filepath.Join(home, codexRel))
	}
	return home, nil
}

// installRoots are the directories a run's CLI is installed in: for a
// binary in an npm package (node_modules/.bin/x links into it), the
// node_modules that holds the package, so a CLI installed in the worker's
// home still runs.
func installRoots(spec *runner.Spec) []string {
	name := spec.Runner
	if len(spec.Command) > 0 {
		name = spec.Command[0]
	}
	var out []string
	for _, p := range runner.Paths(envPath(spec.Env, name)) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		for _, path := range []string{p, real} {
			if i := strings.LastIndex(path, "/node_modules/"); i >= 0 {
				out = append(out, path[:i+len("/node_modules")])
			} else {
				out = append(out, path)
			}
		}
	}
	return out
}

// envPath is where name is found on the PATH of env, or name itself when
// it is a path.
func envPath(env []string, name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	path, _ := lookupEnv(env, "PATH")
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// lastValues is env with one entry per name, the last one given: what the
// process sees.
func lastValues(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if last[name] == i {
			out = append(out, kv)
		}
	}
	return out
}
