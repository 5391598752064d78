package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/activities/runner"
)

// The merge queue of a task on a remote: its pushed branch rebased onto
// the remote target's head, pushed again with a lease on its old head
// (PushBranch), then its pull request merged through GitHub's API with
// the rebased head as the expected one, or, for a repository given by
// URL with no pull request, the target pushed to the rebase with a
// lease on its head at the rebase.

// ErrQueueMerge is the type of a pull request GitHub will not merge
// though the target has not moved (a rule not met, a review missing),
// or will not add to its merge queue.
const ErrQueueMerge = "QueueMerge"

// QueueRebaseRemoteInput names a task's pushed head to rebase onto the
// head of Target on Remote.
type QueueRebaseRemoteInput struct {
	TaskID string `json:"task_id"`
	Repo   string `json:"repo"`
	// Remote is the URL the task pushes to (PushTarget).
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	// Head is the commit the task pushed last.
	Head   string `json:"head"`
	Target string `json:"target"`
}

// QueueRebaseRemote fetches the head of the target from the remote into
// a clean repository of its own and rebases the task's head onto it in
// a scratch clone, keeping the result in the task's repository (or its
// mirror) under QueueRef; nothing of the repository's runs and nothing
// of the remote's but the result's objects enters it. A head that holds
// the target's head already is its own result.
func (p *Pusher) QueueRebaseRemote(ctx context.Context, in QueueRebaseRemoteInput) (QueueRebaseResult, error) {
	repo, err := p.Git.LocalAt(ctx, in.Repo, "", in.Head)
	if err != nil {
		return QueueRebaseResult{}, err
	}
	head, err := p.Git.openRepo(ctx, repo, in.Head)
	if err != nil {
		return QueueRebaseResult{}, err
	}
	if head == "" {
		return QueueRebaseResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("rebasing task %s: commit %s not in %s", in.TaskID, in.Head, in.Repo), ErrCommitMissing, nil)
	}
	mirror, err := p.mirror(ctx, repo)
	if err != nil {
		return QueueRebaseResult{}, fmt.Errorf("rebasing task %s: %w", in.TaskID, err)
	}
	defer os.RemoveAll(mirror)
	base, err := p.fetchTarget(ctx, mirror, in.Remote, in.Target, "task "+in.TaskID)
	if err != nil {
		return QueueRebaseResult{}, err
	}
	if _, err := p.git(ctx, mirror, in.Remote, "merge-base", "--is-ancestor", base, head); err == nil {
		return QueueRebaseResult{Base: base, Head: head, Rebased: head}, nil
	}
	tmp, err := os.MkdirTemp("", "ampflow-queue-")
	if err != nil {
		return QueueRebaseResult{}, fmt.Errorf("rebasing task %s: %w", in.TaskID, err)
	}
	defer os.RemoveAll(tmp)
	return runner.RebaseOnto(ctx, repo, filepath.Join(tmp, "checkout"), head, base, &runner.Source{Repo: mirror, Ref: fetchedTarget}, QueueRef(in.TaskID))
}

// fetchedTarget is the ref of a push's clean repository that
// fetchTarget fetches a remote's target into.
const fetchedTarget = "refs/ampflow/target"

// fetchTarget fetches the head of target from remote into the push's
// clean repository (mirror) as fetchedTarget, with the delivery token as
// a push has it, and returns that head; what names its user in errors.
func (p *Pusher) fetchTarget(ctx context.Context, mirror, remote, target, what string) (string, error) {
	ref := "refs/heads/" + normalizeBranch(target)
	if _, err := p.git(ctx, mirror, remote, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--", remote, "+"+ref+":"+fetchedTarget); err != nil {
		return "", p.remoteError(fmt.Sprintf("fetching %s of %s from %s", target, what, redactURL(remote)), err)
	}
	out, err := p.git(ctx, mirror, remote, "rev-parse", "--verify", fetchedTarget+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("reading the head of %s fetched for %s: %w", target, what, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// QueueTargetInput names the target of a task's pull request.
type QueueTargetInput struct {
	TaskID     string `json:"task_id"`
	GitHubRepo string `json:"github_repo"`
	Target     string `json:"target"`
}

// QueueTargetResult is what the queue needs to know of the target.
type QueueTargetResult struct {
	// Rules are the types of the rules that apply to the target;
	// MergeQueue says one is merge_queue.
	Rules      []string `json:"rules,omitempty"`
	MergeQueue bool     `json:"merge_queue,omitempty"`
}

// QueueTarget reads the rules of the target: one with a merge_queue rule
// is behind GitHub's own merge queue, which the task's pull request then
// goes through (Enqueue), since a merge through the API would bypass it
// or be refused by it.
func (p *PullRequests) QueueTarget(ctx context.Context, in QueueTargetInput) (QueueTargetResult, error) {
	repo, err := p.repo(in.TaskID, in.GitHubRepo)
	if err != nil {
		return QueueTargetResult{}, err
	}
	rules, err := p.API.BranchRules(ctx, repo.Owner, repo.Name, in.Target)
	if err != nil {
		return QueueTargetResult{}, p.apiError(repo, err)
	}
	res := QueueTargetResult{Rules: rules}
	res.MergeQueue = slices.Contains(rules, github.RuleMergeQueue)
	return res, nil
}

// QueueMergePullInput merges a task's pull request under the queue.
type QueueMergePullInput struct {
	TaskID     string `json:"task_id"`
	GitHubRepo string `json:"github_repo"`
	Number     int    `json:"number"`
	Target     string `json:"target"`
	// Base is the target's head the branch was rebased onto; Commit the
	// rebased head, pushed, which the merge must be of.
	Base   string `json:"base"`
	Commit string `json:"commit"`
	Method string `json:"method,omitempty"` // squash, merge or rebase; GitHub's default when empty
	Title  string `json:"title,omitempty"`
}

// QueueMergePullResult is the merge commit, or the target's head when it
// moved away from Base (Moved): the queue then rebases again.
type QueueMergePullResult struct {
	SHA   string `json:"sha,omitempty"`
	Moved bool   `json:"moved,omitempty"`
	Head  string `json:"head,omitempty"`
}

// QueueMerge merges the pull request with in.Commit as its expected
// head, once the target is still at in.Base, so what merges is what CI
// ran on. A pull request merged already (a retry after the merge went
// through) answers its merge commit: nothing merges twice.
func (p *PullRequests) QueueMerge(ctx context.Context, in QueueMergePullInput) (QueueMergePullResult, error) {
	repo, err := p.repo(in.TaskID, in.GitHubRepo)
	if err != nil {
		return QueueMergePullResult{}, err
	}
	merged := func() (QueueMergePullResult, bool, error) {
		pr, err := p.API.GetPull(ctx, repo.Owner, repo.Name, in.Number)
		if err != nil {
			return QueueMergePullResult{}, false, p.apiError(repo, err)
		}
		if pr.Merged {
			return QueueMergePullResult{SHA: pr.MergeCommit}, true, nil
		}
		head, err := p.API.BranchHead(ctx, repo.Owner, repo.Name, in.Target)
		if err != nil {
			return QueueMergePullResult{}, false, p.apiError(repo, err)
		}
		if head != in.Base {
			return QueueMergePullResult{Moved: true, Head: head}, true, nil
		}
		return QueueMergePullResult{}, false, nil
	}
	if res, done, err := merged(); done || err != nil {
		return res, err
	}
	sha, err := p.API.Merge(ctx, repo.Owner, repo.Name, in.Number, in.Commit, in.Method, in.Title)
	switch {
	case errors.Is(err, github.ErrNotMergeable):
		// Merged meanwhile by an attempt whose answer was lost, or the
		// target moved between the read and the merge.
		if res, done, err2 := merged(); done || err2 != nil {
			return res, err2
		}
		return QueueMergePullResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("GitHub does not merge %s#%d of task %s though %s is still at %s: %v", repo, in.Number, in.TaskID, in.Target, ShortHash(in.Base), err),
			ErrQueueMerge, err)
	case errors.Is(err, github.ErrHeadModified):
		return QueueMergePullResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("merging %s#%d of task %s: the branch moved on from %s on GitHub", repo, in.Number, in.TaskID, ShortHash(in.Commit)), ErrPush, err)
	case err != nil:
		return QueueMergePullResult{}, p.apiError(repo, err)
	}
	return QueueMergePullResult{SHA: sha}, nil
}

// QueueMoveRemoteInput moves Target on Remote from Base to Rebased: the
// merge of a repository given by URL that has no pull request.
type QueueMoveRemoteInput struct {
	TaskID  string `json:"task_id"`
	Repo    string `json:"repo"`
	Remote  string `json:"remote"`
	Target  string `json:"target"`
	Base    string `json:"base"`
	Rebased string `json:"rebased"`
}

// QueueMoveRemote pushes the rebase to the target with a lease on the
// target's head at the rebase: a compare and swap on the remote. A
// retry after the push went through finds the target at the rebase
// (Already); a target that moved otherwise is left alone (Moved).
func (p *Pusher) QueueMoveRemote(ctx context.Context, in QueueMoveRemoteInput) (QueueMergeResult, error) {
	repo, err := p.Git.LocalAt(ctx, in.Repo, "", in.Rebased)
	if err != nil {
		return QueueMergeResult{}, err
	}
	mirror, err := p.mirror(ctx, repo)
	if err != nil {
		return QueueMergeResult{}, fmt.Errorf("moving %s of task %s: %w", in.Target, in.TaskID, err)
	}
	defer os.RemoveAll(mirror)
	op := fmt.Sprintf("moving %s of task %s on %s to %s", in.Target, in.TaskID, redactURL(in.Remote), ShortHash(in.Rebased))
	ref := "refs/heads/" + normalizeBranch(in.Target)
	where := func() (QueueMergeResult, error) {
		out, err := p.git(ctx, mirror, in.Remote, "ls-remote", "--", in.Remote, ref)
		if err != nil {
			return QueueMergeResult{}, p.remoteError(op, err)
		}
		head, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\t")
		return QueueMergeResult{Head: head, Already: head == in.Rebased, Moved: head != in.Rebased && head != in.Base}, nil
	}
	res, err := where()
	if err != nil || res.Already || res.Moved {
		return res, err
	}
	if _, err := p.git(ctx, mirror, in.Remote, "push", "--porcelain", "--force-with-lease="+ref+":"+in.Base,
		"--", in.Remote, in.Rebased+":"+ref); err != nil {
		if res, werr := where(); werr == nil && res.Head != in.Base {
			return res, nil
		}
		return QueueMergeResult{}, p.remoteError(op, err)
	}
	return QueueMergeResult{Head: in.Rebased}, nil
}
