package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The merge queue's git: a task's branch rebased onto its target in a
// scratch clone, then the target moved to the result by compare and
// swap, so that a move retried after a crash is not made twice.

// RebaseResult is a branch rebased onto its target's head.
type RebaseResult struct {
	// Base is the target's head the branch was rebased onto; Head the
	// branch's head before.
	Base string `json:"base"`
	Head string `json:"head"`
	// Rebased is the rebased head; empty when the rebase conflicts.
	Rebased string `json:"rebased,omitempty"`
	// Conflicts are the files the rebase stopped on.
	Conflicts []string `json:"conflicts,omitempty"`
}

// Rebase rebases branch of repo onto target's head in a scratch clone
// at dir, which it removes after, and keeps the result in repo under
// ref. A branch that holds target's head already is its own result: no
// clone is made. The clone runs nothing of repo's (see clone).
func Rebase(ctx context.Context, repo, dir, branch, target, ref string) (RebaseResult, error) {
	unlock := lockRepo(repo)
	base, err1 := git(ctx, repo, "rev-parse", "--verify", "refs/heads/"+target+"^{commit}")
	head, err2 := git(ctx, repo, "rev-parse", "--verify", "refs/heads/"+branch+"^{commit}")
	unlock()
	if err := errors.Join(err1, err2); err != nil {
		return RebaseResult{}, fmt.Errorf("rebasing %s onto %s: %w", branch, target, err)
	}
	if _, err := git(ctx, repo, "merge-base", "--is-ancestor", base, head); err == nil {
		return RebaseResult{Base: base, Head: head, Rebased: head}, nil
	}
	return RebaseOnto(ctx, repo, dir, head, base, nil, ref)
}

// Source is a ref of another repository.
type Source struct {
	Repo, Ref string
}

// RebaseOnto rebases the commit head of repo onto the commit base in a
// scratch clone at dir, which it removes after, and keeps the result in
// repo under ref. from, when set, is where base is fetched from into
// the clone (a remote's target, fetched by the caller into a repository
// of its own): nothing of it enters repo but the result's objects. The
// clone runs nothing of repo's (see clone).
func RebaseOnto(ctx context.Context, repo, dir, head, base string, from *Source, ref string) (RebaseResult, error) {
	res := RebaseResult{Base: base, Head: head}
	defer os.RemoveAll(dir)
	if err := clone(ctx, repo, dir); err != nil {
		return res, err
	}
	if from != nil {
		if _, err := git(ctx, dir, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--", from.Repo, from.Ref); err != nil {
			return res, fmt.Errorf("fetching %s from %s: %w", from.Ref, from.Repo, err)
		}
	}
	if _, err := git(ctx, dir, "checkout", "-q", "-B", "ampflow-queue", head); err != nil {
		return res, err
	}
	args := append(identity(ctx, dir), "-c", "rebase.autoSquash=false", "-c", "rebase.autoStash=false",
		"-c", "rebase.updateRefs=false", "rebase", "-q", "--no-verify", base)
	if _, err := git(ctx, dir, args...); err != nil {
		files, lerr := git(ctx, dir, "diff", "--name-only", "--diff-filter=U")
		_, _ = git(ctx, dir, "rebase", "--abort")
		if lerr != nil || files == "" {
			return res, fmt.Errorf("rebasing %s onto %s: %w", shortCommit(head), shortCommit(base), err)
		}
		res.Conflicts = strings.Split(files, "\n")
		return res, nil
	}
	rebased, err := git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return res, err
	}
	res.Rebased = rebased
	defer lockRepo(repo)()
	if _, err := git(ctx, repo, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--", dir, "+refs/heads/ampflow-queue:"+ref); err != nil {
		return res, fmt.Errorf("keeping the rebase of %s as %s: %w", shortCommit(head), ref, err)
	}
	return res, nil
}

// MoveResult is how a move of the target went.
type MoveResult struct {
	// Head is the target's head after the call.
	Head string `json:"head"`
	// Already says the target was at the new head before the call: an
	// earlier try moved it.
	Already bool `json:"already,omitempty"`
	// Moved says the target was neither at the old head nor at the new
	// one: it moved under the queue, and nothing was changed.
	Moved bool `json:"moved,omitempty"`
	// BranchKept names the worktree that has the branch checked out,
	// when the branch was left where it was for it; CheckoutKept the
	// executor's checkout, when it has changes not committed and keeps
	// the branch's old head.
	BranchKept   string `json:"branch_kept,omitempty"`
	CheckoutKept string `json:"checkout_kept,omitempty"`
}

// ErrTargetCheckedOut refuses to move a target checked out in a
// worktree of the repository: its files would no longer match it.
var ErrTargetCheckedOut = errors.New("the target branch is checked out")

// MoveTarget moves target from old to rebased with a compare and swap
// (git update-ref), then branch from head to rebased the same way, and
// drops ref. A target already at rebased is not moved again; one at
// neither is left alone (MoveResult.Moved).
func MoveTarget(ctx context.Context, repo, target, old, rebased, branch, head, ref string) (MoveResult, error) {
	defer lockRepo(repo)()
	if wt, err := BranchWorktree(ctx, repo, target); err != nil {
		return MoveResult{}, err
	} else if wt != "" {
		return MoveResult{}, fmt.Errorf("%w in %s: switch that checkout to another branch (git -C %s switch --detach) and the queue moves it",
			ErrTargetCheckedOut, wt, wt)
	}
	cur := func(b string) string {
		h, _ := git(ctx, repo, "rev-parse", "--verify", "-q", "refs/heads/"+b+"^{commit}")
		return h
	}
	res := MoveResult{Head: cur(target)}
	switch res.Head {
	case rebased:
		res.Already = true
	case old:
		if _, err := git(ctx, repo, "update-ref", "-m", "ampflow merge queue", "refs/heads/"+target, rebased, old); err != nil {
			if res.Head = cur(target); res.Head != rebased {
				res.Moved = true
				return res, nil
			}
		}
		res.Head = rebased
	default:
		res.Moved = true
		return res, nil
	}
	if wt, err := BranchWorktree(ctx, repo, branch); err != nil {
		return res, err
	} else if wt != "" {
		res.BranchKept = wt
	} else if cur(branch) == head && head != rebased {
		if _, err := git(ctx, repo, "update-ref", "-m", "ampflow merge queue", "refs/heads/"+branch, rebased, head); err != nil {
			return res, fmt.Errorf("moving %s to %s: %w", branch, rebased, err)
		}
	}
	if ref != "" {
		_, _ = git(ctx, repo, "update-ref", "-d", ref)
	}
	return res, nil
}

// Repoint checks out commit as branch in the run's checkout at dir (see
// AddTaskWorktree) once the merge queue has moved branch there: the
// checkout's branch, brought back into the repository as the task
// ends, is then the merged one. A checkout of another branch, or with
// changes not committed, is left as it is (false).
func Repoint(ctx context.Context, dir, branch, commit string) (bool, error) {
	if TaskBranch(dir) != branch {
		return false, nil
	}
	if ref, ok := cloneBranch(ctx, dir); !ok || ref != "refs/heads/"+branch {
		return false, nil
	}
	st, err := git(ctx, dir, "status", "--porcelain", "--untracked-files=no")
	if err != nil || st != "" {
		return false, err
	}
	if _, err := git(ctx, dir, "checkout", "-q", "-B", branch, commit); err != nil {
		return false, fmt.Errorf("moving the checkout %s to %s: %w", dir, commit, err)
	}
	return true, nil
}

func shortCommit(h string) string { return h[:min(len(h), 12)] }
