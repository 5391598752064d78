package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ampflow/ampflow/amp"
)

// Branches of the throwaway repository every benchmark task works on.
const (
	baseBranch    = "main"
	featureBranch = "feature/bench"
)

// repo is the throwaway repository: one commit on main, one more on the
// feature branch, whose diff every task_result reports.
type repo struct {
	dir    string
	commit string
	diff   amp.DiffSummary
}

// The file the feature commit adds; its line count is the diff.
const (
	benchFile    = "bench.txt"
	benchContent = "one\ntwo\nthree\n"
)

func makeRepo(ctx context.Context, dir string) (repo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return repo{}, fmt.Errorf("creating the benchmark repository %s: %w", dir, err)
	}
	files := map[string]string{"README.md": "# benchmark repository\n"}
	steps := [][]string{
		{"init", "-q", "-b", baseBranch},
		{"add", "README.md"},
		{"commit", "-q", "-m", "Initial commit"},
		{"checkout", "-q", "-b", featureBranch},
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return repo{}, fmt.Errorf("writing %s in %s: %w", name, dir, err)
		}
	}
	for _, s := range steps {
		if _, err := git(ctx, dir, s...); err != nil {
			return repo{}, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, benchFile), []byte(benchContent), 0o644); err != nil {
		return repo{}, fmt.Errorf("writing %s in %s: %w", benchFile, dir, err)
	}
	for _, s := range [][]string{{"add", benchFile}, {"commit", "-q", "-m", "Add " + benchFile}} {
		if _, err := git(ctx, dir, s...); err != nil {
			return repo{}, err
		}
	}
	head, err := git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return repo{}, err
	}
	return repo{
		dir:    dir,
		commit: strings.TrimSpace(head),
		diff:   amp.DiffSummary{FilesChanged: []string{benchFile}, LinesAdded: strings.Count(benchContent, "\n")},
	}, nil
}

// git runs git in dir, away from the user's configuration, so hooks,
// signing or another default branch cannot change the repository.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	full := append([]string{"-c", "user.name=ampflow bench", "-c", "user.email=bench@ampflow.invalid", "-c", "commit.gpgsign=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s in %s: %s", strings.Join(args, " "), dir, msg)
	}
	return stdout.String(), nil
}

// branch gives taskID a branch of its own at the feature commit: a task
// holds its branch's lease while it runs, so tasks sharing one branch
// would run one at a time. The ref is written as a file, with no git
// process per task.
func (r repo) branch(taskID string) (string, error) {
	name := "bench/" + taskID
	path := filepath.Join(r.dir, ".git", "refs", "heads", filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("creating branch %s in %s: %w", name, r.dir, err)
	}
	if err := os.WriteFile(path, []byte(r.commit+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("creating branch %s in %s: %w", name, r.dir, err)
	}
	return name, nil
}
