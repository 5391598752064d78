package activities

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github"
)

// ErrCIRateLimited is the type of the retryable error a rate-limited CI
// API returns; its NextRetryDelay waits for the limit's reset.
const ErrCIRateLimited = "CIRateLimited"

// CheckLister is what GitHubCI needs of the GitHub client.
type CheckLister interface {
	CommitChecks(ctx context.Context, owner, repo, ref string) ([]github.Check, error)
}

// FailureReader reads what GitHub says of failed checks; the GitHub
// client implements it.
type FailureReader interface {
	FailedChecks(ctx context.Context, owner, repo, ref string, logBytes int) ([]github.FailedCheck, error)
}

// GitHubCI reads a commit's check runs and commit statuses on GitHub. The
// repository is the one the task recorded when it started
// (CIStatusInput.GitHubRepo); the task's remotes are not read again.
//
// Roll-up: any failed check makes the commit failed; otherwise any pending
// one makes it pending; otherwise it passed. A commit with no checks at
// all is NoChecks, pending by default.
type GitHubCI struct {
	Client CheckLister
	Git    *Git
	// Repo is ci.github.repo, for a task with no repository recorded
	// (one started before tasks recorded it); the zero Repo means none.
	Repo     github.Repo
	NoChecks CIState
	// Secrets masks what failed checks print before it reaches the
	// executor; nil masks nothing.
	Secrets *child.Scrubber
	// Now is the clock for rate-limit delays; nil is time.Now.
	Now func() time.Time
}

// Status implements CIProvider.
func (c *GitHubCI) Status(ctx context.Context, in CIStatusInput) (CIStatusResult, error) {
	var err error
	if in.Repo, err = c.Git.Local(ctx, in.Repo, false); err != nil {
		return CIStatusResult{}, err
	}
	commit, err := commitOf(ctx, c.Git, in)
	if err != nil {
		return CIStatusResult{}, err
	}
	repo, ok := github.ParseFullName(in.GitHubRepo)
	if !ok {
		repo = c.Repo // a task from before repositories were recorded
	}
	if repo.Name == "" {
		return CIStatusResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("github CI: task %s has no GitHub repository: the origin of %s was not on GitHub when the task started (set ci.github.repo)", in.TaskID, in.Repo), ErrCIConfig, nil)
	}
	checks, err := c.Client.CommitChecks(ctx, repo.Owner, repo.Name, commit)
	if err != nil {
		return CIStatusResult{}, c.ciError(repo, commit, err)
	}
	res := rollUp(checks, c.NoChecks)
	res.Commit = commit
	if res.State == CIFailed {
		if fr, ok := c.Client.(FailureReader); ok {
			// The details are a help to the executor, not the verdict:
			// when they cannot be read, the failure still stands.
			if fails, err := fr.FailedChecks(ctx, repo.Owner, repo.Name, commit, ciLogTail); err == nil && len(fails) > 0 {
				res.Detail = c.Secrets.Scrub(failureDetail(fails, ciDetailMax))
				res.LogURL = fails[0].URL
			}
		}
	}
	return res, nil
}

// ciError maps the GitHub client's errors onto Temporal's: configuration
// problems are final, rate limits wait for their reset, the rest retry.
func (c *GitHubCI) ciError(repo github.Repo, commit string, err error) error {
	msg := fmt.Sprintf("github CI of %s@%s: %v", repo, ShortHash(commit), err)
	var rl *github.RateLimitedError
	switch {
	case errors.Is(err, github.ErrNoToken):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("github CI of %s: no token configured (set the GitHub token to read check runs)", repo), ErrCIConfig, err)
	case errors.Is(err, github.ErrNotFound):
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("github CI: repository %s or commit %s unknown to GitHub, or the token cannot see it", repo, ShortHash(commit)), ErrCIConfig, err)
	case errors.Is(err, github.ErrUnauthorized):
		return temporal.NewNonRetryableApplicationError(msg, ErrCIConfig, err)
	case errors.As(err, &rl):
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		delay := max(rl.RetryAt.Sub(now())+time.Second, time.Second)
		return temporal.NewApplicationErrorWithOptions(msg, ErrCIRateLimited, temporal.ApplicationErrorOptions{
			NextRetryDelay: delay,
			Cause:          err,
		})
	}
	return fmt.Errorf("reading %s: %w", msg, err)
}

// rollUp folds checks into one state, as documented on GitHubCI.
func rollUp(checks []github.Check, noChecks CIState) CIStatusResult {
	if len(checks) == 0 {
		if noChecks == "" {
			noChecks = CIPending
		}
		return CIStatusResult{State: noChecks}
	}
	res := CIStatusResult{State: CIPassed, Checks: make(map[string]string, len(checks))}
	rank := map[github.Outcome]int{github.OutcomePassed: 0, github.OutcomePending: 1, github.OutcomeFailed: 2}
	for _, ck := range checks {
		name := ck.Name
		if prev, ok := res.Checks[name]; ok && rank[github.Outcome(prev)] >= rank[ck.Outcome] {
			continue // a status and a check run of one name: the worse wins
		}
		res.Checks[name] = string(ck.Outcome)
	}
	pending := false
	for name, o := range res.Checks {
		switch github.Outcome(o) {
		case github.OutcomeFailed:
			res.Failing = append(res.Failing, name)
		case github.OutcomePending:
			pending = true
		}
	}
	sort.Strings(res.Failing)
	switch {
	case len(res.Failing) > 0:
		res.State = CIFailed
		res.Detail = "failing: " + strings.Join(res.Failing, ", ")
	case pending:
		res.State = CIPending
	}
	return res
}
