package activities

import (
	"context"
	"fmt"
	"os"

	"github.com/ampflow/ampflow/amp"
)

// BranchFromRemote is BranchFrom for a repository whose tasks deliver
// to its push remote, where their merge queue moves the target: in.Branch
// is made, unless it exists, at the head in.From has on that remote now
// (origin's URL, as PushTarget reads it), not at the repository's own
// From, which the queue never moves. The head is fetched as the queue's
// rebase fetches it (fetchTarget: a clean repository of its own, the
// delivery token only in the fetch's environment), and only its objects
// enter the repository, with nothing of it run. A repository given by
// URL is its mirror, which BranchFrom fetches first.
func (p *Pusher) BranchFromRemote(ctx context.Context, in BranchFromInput) (BranchFromResult, error) {
	if amp.RepoIsURL(in.Repo) {
		return p.Git.BranchFrom(ctx, in)
	}
	res, err := p.Git.BranchFrom(ctx, BranchFromInput{Repo: in.Repo, From: in.From})
	if err != nil {
		return BranchFromResult{}, err
	}
	branch := normalizeBranch(in.Branch)
	if branch == "" {
		return res, nil
	}
	refs, err := p.Git.openRefs(ctx, in.Repo, branch)
	if err != nil {
		return BranchFromResult{}, err
	}
	if own, err := refs.head(in.Repo, branch); err == nil {
		res.Head = own
		return res, nil
	}
	target, err := p.Target(ctx, PushTargetInput{TaskID: branch, Repo: in.Repo})
	if err != nil {
		return BranchFromResult{}, err
	}
	mirror, err := p.mirror(ctx, in.Repo)
	if err != nil {
		return BranchFromResult{}, fmt.Errorf("making branch %s: %w", branch, err)
	}
	defer os.RemoveAll(mirror)
	what := "branch " + branch
	head, err := p.fetchTarget(ctx, mirror, target.URL, res.From, what)
	if err != nil {
		return BranchFromResult{}, err
	}
	if _, err := p.Git.run(ctx, in.Repo, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--", mirror, fetchedTarget); err != nil {
		return BranchFromResult{}, fmt.Errorf("bringing %s of %s at %s into %s: %w", res.From, redactURL(target.URL), ShortHash(head), in.Repo, err)
	}
	res.FromHead = head
	if res.Head, err = p.Git.createBranch(ctx, in.Repo, branch, head); err != nil {
		return BranchFromResult{}, err
	}
	res.Created = true
	return res, nil
}
