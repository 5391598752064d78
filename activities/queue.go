package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// Failure types of the merge queue.
const (
	// ErrQueueRepo: the repository is given by URL, which QueueRebase and
	// QueueMerge do not work in: its queue runs on the remote
	// (QueueRebaseRemote, then QueueMergePull or QueueMoveRemote).
	ErrQueueRepo = "QueueRepo"
	// ErrTargetCheckedOut: the target branch is checked out in a
	// worktree, whose files a move of the branch would leave behind.
	ErrTargetCheckedOut = "TargetCheckedOut"
)

// QueueRef is the ref a task's rebased branch is kept under while the
// queue runs CI on it.
func QueueRef(taskID string) string { return "refs/ampflow/queue/" + taskID }

// QueueRebaseInput names a task's branch to rebase onto its target.
type QueueRebaseInput struct {
	TaskID string `json:"task_id"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Target string `json:"target"`
}

// QueueRebaseResult is the rebase: the target's head, the branch's
// head, and the rebased head or the conflicting files.
type QueueRebaseResult = runner.RebaseResult

// QueueRebase rebases a task's branch onto its target's head in a
// scratch clone and keeps the result under QueueRef; nothing of the
// repository's runs. Neither branch moves: QueueMerge moves them.
func (a *Activities) QueueRebase(ctx context.Context, in QueueRebaseInput) (QueueRebaseResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	repo, err := a.queueRepo(ctx, in.Repo)
	if err != nil {
		return QueueRebaseResult{}, err
	}
	tmp, err := os.MkdirTemp("", "ampflow-queue-")
	if err != nil {
		return QueueRebaseResult{}, fmt.Errorf("rebasing %s: %w", in.Branch, err)
	}
	defer os.RemoveAll(tmp)
	return runner.Rebase(ctx, repo, filepath.Join(tmp, "checkout"), in.Branch, in.Target, QueueRef(in.TaskID))
}

// QueueMergeInput is a rebase to merge: the target from Base to Rebased,
// the branch from Head to Rebased.
type QueueMergeInput struct {
	TaskID  string `json:"task_id"`
	Repo    string `json:"repo"`
	Branch  string `json:"branch"`
	Target  string `json:"target"`
	Base    string `json:"base"`
	Head    string `json:"head"`
	Rebased string `json:"rebased"`
}

// QueueMergeResult is how the merge went (runner.MoveResult).
type QueueMergeResult = runner.MoveResult

// QueueMerge moves the target from its head at the rebase to the
// rebased commit with a compare and swap, then the task's branch: a
// retry after a crash finds the target moved already and moves nothing
// twice. A target that moved otherwise is left alone (Moved).
func (a *Activities) QueueMerge(ctx context.Context, in QueueMergeInput) (QueueMergeResult, error) {
	defer heartbeatEvery(ctx, shortBeat)()
	repo, err := a.queueRepo(ctx, in.Repo)
	if err != nil {
		return QueueMergeResult{}, err
	}
	res, err := runner.MoveTarget(ctx, repo, in.Target, in.Base, in.Rebased, in.Branch, in.Head, QueueRef(in.TaskID))
	if errors.Is(err, runner.ErrTargetCheckedOut) {
		return res, temporal.NewNonRetryableApplicationError(err.Error(), ErrTargetCheckedOut, nil)
	}
	if err != nil || res.Moved {
		return res, err
	}
	// A runner executor's checkout is brought back into the repository
	// as the task ends: it must hold the merged branch by then.
	if ag, ok := a.runnerAgent(amp.RoleExecutor); ok {
		if dir := WorktreeDir(ag.WorkDir, in.TaskID, amp.RoleExecutor); isWorktreeTop(ctx, dir) {
			moved, err := runner.Repoint(ctx, dir, in.Branch, res.Head)
			if err != nil {
				return res, err
			}
			if !moved {
				res.CheckoutKept = dir
			}
		}
	}
	return res, nil
}

func (a *Activities) queueRepo(ctx context.Context, repo string) (string, error) {
	if amp.RepoIsURL(repo) {
		return "", temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the merge queue moves a target here in a local repository only; %s is given by URL, and its queue runs on the remote", redactURL(repo)),
			ErrQueueRepo, nil)
	}
	if a.Git == nil {
		return repo, nil
	}
	return a.Git.Local(ctx, repo, false)
}
