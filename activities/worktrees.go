package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
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
	// SalvagedRun is the message whose run left the salvaged work, when
	// the run noted its end.
	SalvagedRun string `json:"salvaged_run,omitempty"`
	// Refused says why the executor's checkout was not salvaged and is
	// left on disk: it would delete files no run deleted, or its HEAD or
	// index is gone.
	Refused string `json:"refused,omitempty"`
	// Finished is set when the checkouts were marked as being removed
	// already: an earlier cleanup was stopped, and this one finished it
	// without salvaging anything.
	Finished bool `json:"finished,omitempty"`
	// Removed are the worktrees removed.
	Removed []string `json:"removed,omitempty"`
}

// CleanupWorktrees removes the runner worktrees of a task that ended,
// after committing whatever the executor's holds uncommitted to a salvage
// branch, and forgets the task's sessions. With no runner-mode agent it
// does nothing; run again, it finds nothing more to do.
func (a *Activities) CleanupWorktrees(ctx context.Context, in CleanupWorktreesInput) (CleanupWorktreesResult, error) {
	var res CleanupWorktreesResult
	// Heartbeats let a cleanup whose worker died be retried by the next
	// one within the activity's heartbeat timeout, so the branch lease
	// that waits on it goes in seconds.
	stop := heartbeatEvery(ctx, cleanupBeat)
	defer stop()
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
		marked, err := a.worktreeMarked(ctx, dir)
		if err != nil {
			return res, err
		}
		if marked {
			// ampflow was removing it when it was stopped: what is missing
			// there is ampflow's doing, never the agent's work.
			res.Finished = true
		} else if role == amp.RoleExecutor {
			keep, err := a.salvageExecutor(ctx, in, dir, &res)
			if err != nil {
				return res, err
			}
			if !keep {
				continue
			}
		}
		if err := a.removeWorktree(ctx, in, ag.WorkDir, dir); err != nil {
			return res, err
		}
		res.Removed = append(res.Removed, dir)
	}
	return res, nil
}

// salvageExecutor commits what the executor's last run left uncommitted
// to a salvage branch and brings it and the task's branch into the
// repository. keep is false when the salvage was refused (res.Refused):
// the checkout stays on disk for a person to look at.
func (a *Activities) salvageExecutor(ctx context.Context, in CleanupWorktreesInput, dir string, res *CleanupWorktreesResult) (keep bool, err error) {
	ref, _, note, err := runner.SalvageLeftover(ctx, dir, in.TaskID, "task "+in.TaskID+" ended")
	var refused *runner.RefusedSalvage
	switch {
	case errors.As(err, &refused), errors.Is(err, runner.ErrNotIntact):
		res.Refused = err.Error() + "; the checkout is left at " + dir
		ref = ""
	case err != nil:
		return false, fmt.Errorf("salvaging the worktree of task %s: %w", in.TaskID, err)
	}
	// The checkout's branch and salvage go into the repository before
	// the checkout does.
	kept := []string{}
	if b := runner.TaskBranch(dir); b != "" {
		kept = append(kept, b)
	}
	if ref != "" {
		kept = append(kept, ref)
	}
	if err := runner.FetchBack(ctx, in.Repo, dir, kept...); err != nil {
		return false, fmt.Errorf("bringing the executor's branches of task %s into %s: %w", in.TaskID, in.Repo, err)
	}
	res.Salvaged = ref
	if ref != "" {
		res.SalvagedRun = note.MsgID
	}
	return res.Refused == "", nil
}

// removeWorktree marks the checkout at dir as being removed, before its
// first file goes, removes it and the task's sessions, then forgets the
// mark.
func (a *Activities) removeWorktree(ctx context.Context, in CleanupWorktreesInput, workDir, dir string) error {
	if a.Marks != nil {
		if err := a.Marks.MarkWorktree(ctx, ssot.WorktreeMark{Path: dir, TaskID: in.TaskID, Repo: in.Repo}); err != nil {
			return err
		}
	}
	if err := runner.RemoveWorktree(ctx, in.Repo, dir); err != nil {
		return fmt.Errorf("removing the worktree of task %s: %w", in.TaskID, err)
	}
	sessions, _ := filepath.Glob(filepath.Join(workDir, "sessions", in.TaskID+".*"))
	for _, s := range sessions {
		if err := os.Remove(s); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("forgetting the sessions of task %s: %w", in.TaskID, err)
		}
	}
	if a.Marks != nil {
		return a.Marks.UnmarkWorktree(ctx, dir)
	}
	return nil
}

func (a *Activities) worktreeMarked(ctx context.Context, dir string) (bool, error) {
	if a.Marks == nil {
		return false, nil
	}
	return a.Marks.WorktreeMarked(ctx, dir)
}

// cleanupBeat is how often CleanupWorktrees heartbeats.
const cleanupBeat = 2 * time.Second

// heartbeatEvery heartbeats the activity of ctx every d until stop.
func heartbeatEvery(ctx context.Context, d time.Duration) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done) }
}

// FinishMarkedWorktrees removes the runner checkouts whose removal a
// stopped worker left half done (marked in marks), without salvaging
// anything, and forgets their marks; a worker runs it as it starts. It
// returns the checkouts it removed.
func FinishMarkedWorktrees(ctx context.Context, marks WorktreeMarks) ([]ssot.WorktreeMark, error) {
	list, err := marks.MarkedWorktrees(ctx, 1000)
	if err != nil {
		return nil, err
	}
	var done []ssot.WorktreeMark
	for _, m := range list {
		if m.Repo != "" {
			if err := runner.RemoveWorktree(ctx, m.Repo, m.Path); err != nil {
				return done, fmt.Errorf("finishing the removal of %s (task %s): %w", m.Path, m.TaskID, err)
			}
		} else if err := os.RemoveAll(m.Path); err != nil {
			return done, fmt.Errorf("finishing the removal of %s (task %s): %w", m.Path, m.TaskID, err)
		}
		if err := marks.UnmarkWorktree(ctx, m.Path); err != nil {
			return done, err
		}
		done = append(done, m)
	}
	return done, nil
}

// WorktreeMarks keeps, in the SSOT, the runner checkouts ampflow is
// removing (*ssot.DB).
type WorktreeMarks interface {
	MarkWorktree(ctx context.Context, m ssot.WorktreeMark) error
	WorktreeMarked(ctx context.Context, path string) (bool, error)
	UnmarkWorktree(ctx context.Context, path string) error
	MarkedWorktrees(ctx context.Context, limit int) ([]ssot.WorktreeMark, error)
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
