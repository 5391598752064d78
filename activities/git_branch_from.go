package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// BranchFromInput names a branch to make from another's head.
type BranchFromInput struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	// From is the branch whose head Branch is made at; empty is the
	// repository's default branch.
	From string `json:"from,omitempty"`
}

// BranchFromResult is what BranchFrom found and made.
type BranchFromResult struct {
	DefaultBranch string `json:"default_branch"`
	// From is the branch Branch was made from, FromHead its head then.
	From     string `json:"from"`
	FromHead string `json:"from_head"`
	// Head is Branch's head: FromHead when it was made now, its own when
	// it existed already.
	Head    string `json:"head"`
	Created bool   `json:"created"`
}

// BranchFrom makes in.Branch at the head of in.From (the default branch
// when empty) unless it exists; with no Branch it only reads From's head.
// A From the repository lacks is an ErrBranchMissing.
func (g *Git) BranchFrom(ctx context.Context, in BranchFromInput) (BranchFromResult, error) {
	repo, err := g.Local(ctx, in.Repo, true)
	if err != nil {
		return BranchFromResult{}, err
	}
	from, branch := normalizeBranch(in.From), normalizeBranch(in.Branch)
	refs, err := g.openRefs(ctx, repo, from, branch)
	if err != nil {
		return BranchFromResult{}, err
	}
	def, _, err := g.defaultBranch(ctx, repo, &refs, "", nil)
	if err != nil {
		return BranchFromResult{}, fmt.Errorf("finding the default branch of %s: %w", repo, err)
	}
	if from == "" {
		from = def
	}
	head, err := refs.head(repo, from)
	if err != nil || from == "" {
		return BranchFromResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("branch %q is not in %s", from, in.Repo), ErrBranchMissing, err)
	}
	res := BranchFromResult{DefaultBranch: def, From: from, FromHead: head}
	if branch == "" {
		return res, nil
	}
	if own, err := refs.head(repo, branch); err == nil {
		res.Head = own
		return res, nil
	}
	if res.Head, err = g.createBranch(ctx, repo, branch, head); err != nil {
		return BranchFromResult{}, err
	}
	res.Created = true
	return res, nil
}
