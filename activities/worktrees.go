package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// PIDDir is where runs under workDir (data_dir) keep their pid files, for
// runner.Reap.
func PIDDir(workDir string) string { return filepath.Join(workDir, "pids") }

// WorktreeDir is where a role's runner works on a task: the executor in a
// worktree on the task's branch, the reviewer in a detached one.
func WorktreeDir(workDir, taskID string, role amp.Role) string {
	if role == amp.RoleReviewer {
		return filepath.Join(workDir, "worktrees", taskID+"-review")
	}
	return filepath.Join(workDir, "worktrees", taskID)
}

// CleanupWorktreesInput names the task that ended.
type CleanupWorktreesInput struct {
	TaskID string `json:"task_id"`
	Repo   string `json:"repo"`
}

// CleanupWorktreesResult says what was kept and what went.
type CleanupWorktreesResult struct {
	// Salvaged is the branch that holds what the executor left
	// uncommitted, ampflow/salvage/<task>/<n>; empty when nothing was.
	Salvaged string `json:"salvaged,omitempty"`
	// Removed are the worktrees removed.
	Removed []string `json:"removed,omitempty"`
}

// CleanupWorktrees removes the runner worktrees of a task that ended,
// after committing whatever the executor's holds uncommitted to a salvage
// branch, and forgets the task's sessions. With no runner-mode agent it
// does nothing; run again, it finds nothing more to do.
func (a *Activities) CleanupWorktrees(ctx context.Context, in CleanupWorktreesInput) (CleanupWorktreesResult, error) {
	var res CleanupWorktreesResult
	if a.Git != nil {
		var err error
		if in.Repo, err = a.Git.Local(ctx, in.Repo, false); err != nil {
			return res, err
		}
	}
	for _, role := range []amp.Role{amp.RoleExecutor, amp.RoleReviewer} {
		ag, ok := a.runnerAgent(role)
		if !ok || in.TaskID == "" {
			continue
		}
		dir := WorktreeDir(ag.WorkDir, in.TaskID, role)
		if !isWorktreeTop(ctx, dir) {
			// Never created, or removed by an earlier attempt; a directory
			// that is no worktree is left alone: git there would act on
			// whatever repository holds it.
			continue
		}
		if role == amp.RoleExecutor {
			ref, _, err := runner.SalvageTask(ctx, dir, in.TaskID, "ampflow: salvage of what the executor left uncommitted when task "+in.TaskID+" ended")
			if err != nil {
				return res, fmt.Errorf("salvaging the worktree of task %s: %w", in.TaskID, err)
			}
			// The checkout's branch and salvage go into the repository
			// before the checkout does.
			kept := []string{}
			if b := runner.TaskBranch(dir); b != "" {
				kept = append(kept, b)
			}
			if ref != "" {
				kept = append(kept, ref)
			}
			if err := runner.FetchBack(ctx, in.Repo, dir, kept...); err != nil {
				return res, fmt.Errorf("bringing the executor's branches of task %s into %s: %w", in.TaskID, in.Repo, err)
			}
			res.Salvaged = ref
		}
		if err := runner.RemoveWorktree(ctx, in.Repo, dir); err != nil {
			return res, fmt.Errorf("removing the worktree of task %s: %w", in.TaskID, err)
		}
		res.Removed = append(res.Removed, dir)
		sessions, _ := filepath.Glob(filepath.Join(ag.WorkDir, "sessions", in.TaskID+".*"))
		for _, s := range sessions {
			if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
				return res, fmt.Errorf("forgetting the sessions of task %s: %w", in.TaskID, err)
			}
		}
	}
	return res, nil
}

// RunnerAgents is a Deliverer that runs agents' CLIs in worktrees
// (*Delivery).
type RunnerAgents interface {
	// RunnerAgent returns how role is delivered to when it is a
	// runner-mode agent with a data_dir to work in.
	RunnerAgent(role amp.Role) (AgentDelivery, bool)
}

func (a *Activities) runnerAgent(role amp.Role) (AgentDelivery, bool) {
	r, ok := a.Delivery.(RunnerAgents)
	if !ok {
		return AgentDelivery{}, false
	}
	return r.RunnerAgent(role)
}

// isWorktreeTop reports whether dir is the top of a git work tree.
func isWorktreeTop(ctx context.Context, dir string) bool {
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	// runGit stops git at dir: a plain directory is not taken for the
	// repository above it.
	out, err := RunGit(ctx, "git", dir, false, "rev-parse", "--show-toplevel")
	if err != nil {
		return false
	}
	top, err1 := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	want, err2 := filepath.EvalSymlinks(dir)
	return err1 == nil && err2 == nil && top == want
}

// checkRunnerBranch refuses a task whose branch a runner-mode executor
// could not check out: it is checked out in the user's own checkout or in
// a worktree that is not ampflow's. Another task's worktree does not
// count: it goes when that task ends, before its branch lease is released.
func (a *Activities) checkRunnerBranch(ctx context.Context, in CheckBranchInput) error {
	ag, ok := a.runnerAgent(amp.RoleExecutor)
	if !ok {
		return nil
	}
	branch := normalizeBranch(in.Branch)
	path, err := runner.BranchWorktree(ctx, in.Repo, branch)
	if err != nil || path == "" {
		return err
	}
	if within(filepath.Join(ag.WorkDir, "worktrees"), path) {
		return nil
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"branch %q of %s is checked out in %s, and the runner executor works on it in a worktree of its own, "+
			"which git allows only where the branch is not checked out: switch that checkout to another branch "+
			"(git -C %s switch --detach, or git -C %s switch main) or remove that worktree (git -C %s worktree remove %s), then start the task again",
		branch, in.Repo, path, path, path, in.Repo, path), ErrBranchCheckedOut, nil)
}

// within reports whether path is dir or lies under it.
func within(dir, path string) bool {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
