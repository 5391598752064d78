package task

import (
	"time"

	"github.com/ampflow/ampflow/amp/decision"
)

// Delivery is what a task does on GitHub (the worker's delivery.*): all
// zero does nothing, and the task's history has none of its activities.
type Delivery struct {
	// Push pushes the branch after each accepted result.
	Push bool `json:"push,omitempty"`
	// PullRequest is draft or ready to open a pull request; empty or
	// "off" opens none.
	PullRequest string `json:"pull_request,omitempty"`
	// Merge is squash, merge or rebase to merge after the final
	// approval; empty or "off" leaves the pull request open.
	Merge string `json:"merge,omitempty"`
	// Approvals is how many GitHub approvals of the head to wait for.
	Approvals int `json:"approvals,omitempty"`
	// CountRejections counts "changes requested" toward the lock.
	CountRejections bool `json:"count_rejections,omitempty"`
	// Poll is how often the reviews are read.
	Poll time.Duration `json:"poll,omitempty"`
}

// PullRequests reports whether a pull request is kept.
func (d Delivery) PullRequests() bool { return d.PullRequest == "draft" || d.PullRequest == "ready" }

// Merges reports whether the pull request is merged after approval.
func (d Delivery) Merges() bool { return d.PullRequests() && d.Merge != "" && d.Merge != "off" }

// KindGitHub: pushing the branch or keeping its pull request failed in a
// way a retry will not mend (credentials, a branch moved on on GitHub, a
// merge conflict that rebase rounds did not resolve).
const KindGitHub decision.Kind = "github"

// OptRetryGitHub tries the push, the pull request or the merge again.
const OptRetryGitHub = "retry_github"

// SignalGitHubReview wakes a task waiting for GitHub reviews: the webhook
// route saw a review of its pull request. The task then reads the
// reviews itself; the signal carries nothing it trusts.
const SignalGitHubReview = "github_review"

// GitHubReviewSignal is SignalGitHubReview's payload.
type GitHubReviewSignal struct {
	// Delivery is GitHub's X-GitHub-Delivery id, for the logs.
	Delivery string `json:"delivery,omitempty"`
}
