package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ampflow/ampflow/amp"
)

// Branch names of the demo repository.
const (
	BaseBranch    = "main"
	FeatureBranch = "feature/demo"
)

// repo is the throwaway repository the scripted executor works in.
type repo struct {
	dir string
}

// gitIdentity is set per command, so neither the user's configuration nor
// a missing identity changes what the demo does.
var gitIdentity = []string{"-c", "user.name=ampflow demo", "-c", "user.email=demo@ampflow.invalid", "-c", "commit.gpgsign=false"}

func (r repo) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append(append([]string{}, gitIdentity...), args...)...)
	cmd.Dir = r.dir
	// The user's global and system configuration (hooks, signing, default
	// branch) stay out of a repository nobody else will use.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s in %s: %s", strings.Join(args, " "), r.dir, msg)
	}
	return stdout.String(), nil
}

// newRepo creates dir (a new temporary directory when empty) as a git
// repository with one commit on main and feature/demo checked out.
func newRepo(ctx context.Context, dir string) (repo, error) {
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "ampflow-demo-")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return repo{}, fmt.Errorf("creating the demo repository: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return repo{}, fmt.Errorf("resolving the demo repository %s: %w", dir, err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		return repo{}, fmt.Errorf("creating the demo repository: %s must be an empty directory", dir)
	}
	r := repo{dir: dir}
	readme := "# ampflow demo\n\nA throwaway repository for `ampflow demo`.\n"
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
		return repo{}, fmt.Errorf("writing README.md in %s: %w", dir, err)
	}
	steps := [][]string{
		{"init", "-q", "-b", BaseBranch},
		{"add", "README.md"},
		{"commit", "-q", "-m", "Initial commit"},
		{"checkout", "-q", "-b", FeatureBranch},
	}
	for _, s := range steps {
		if _, err := r.git(ctx, s...); err != nil {
			return repo{}, err
		}
	}
	return r, nil
}

// commitFile writes a file on the checked-out branch, commits it and
// returns the commit's hash.
func (r repo) commitFile(ctx context.Context, name, content, message string) (string, error) {
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644); err != nil {
		return "", fmt.Errorf("writing %s in %s: %w", name, r.dir, err)
	}
	if _, err := r.git(ctx, "add", "--", name); err != nil {
		return "", err
	}
	if _, err := r.git(ctx, "commit", "-q", "-m", message); err != nil {
		return "", err
	}
	out, err := r.git(ctx, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// diffSummary is what the feature branch changed since it left main, as
// the workflow's own git check counts it.
func (r repo) diffSummary(ctx context.Context) (amp.DiffSummary, error) {
	out, err := r.git(ctx, "diff", "--numstat", "-z", "--no-renames", BaseBranch+"...HEAD")
	if err != nil {
		return amp.DiffSummary{}, err
	}
	return parseNumstat(out)
}

// parseNumstat reads `git diff --numstat -z` records "added\tremoved\tpath";
// binary files show "-" and count nothing.
func parseNumstat(out string) (amp.DiffSummary, error) {
	sum := amp.DiffSummary{FilesChanged: []string{}}
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 {
			return sum, fmt.Errorf("unexpected numstat record %q", rec)
		}
		counts := []*int{&sum.LinesAdded, &sum.LinesRemoved}
		for i, n := range f[:2] {
			if n == "-" {
				continue
			}
			v, err := strconv.Atoi(n)
			if err != nil {
				return sum, fmt.Errorf("unexpected numstat count %q", n)
			}
			*counts[i] += v
		}
		sum.FilesChanged = append(sum.FilesChanged, f[2])
	}
	return sum, nil
}

// describeDiff is a diff summary in a few words: "hello.sh +2 -0".
func describeDiff(d amp.DiffSummary) string {
	return fmt.Sprintf("%s +%d -%d", strings.Join(d.FilesChanged, ", "), d.LinesAdded, d.LinesRemoved)
}
