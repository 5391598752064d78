package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/github"
)

// PullAPI is what PullRequests needs of the GitHub client.
type PullAPI interface {
	FindPull(ctx context.Context, owner, repo, branch string) (*github.PullRequest, error)
	CreatePull(ctx context.Context, owner, repo string, np github.NewPull) (github.PullRequest, error)
	GetPull(ctx context.Context, owner, repo string, number int) (github.PullRequest, error)
	UpdatePull(ctx context.Context, owner, repo string, number int, title, body string) (github.PullRequest, error)
	MarkReady(ctx context.Context, nodeID string) error
	Reviews(ctx context.Context, owner, repo string, number int, etag string) ([]github.Review, string, bool, error)
	ReviewComments(ctx context.Context, owner, repo string, number int, reviewID int64) ([]github.ReviewComment, error)
	CanWrite(ctx context.Context, owner, repo, user string) (bool, error)
	Merge(ctx context.Context, owner, repo string, number int, sha, method, title string) (string, error)
	BranchHead(ctx context.Context, owner, repo, branch string) (string, error)
	BranchRules(ctx context.Context, owner, repo, branch string) ([]string, error)
	Enqueue(ctx context.Context, nodeID, expectedHead string) (github.MergeQueueEntry, error)
	QueueEntry(ctx context.Context, nodeID string) (github.MergeQueueEntry, error)
}

// PullRequests keeps a task's pull request on GitHub: opened once, kept
// up to date, its reviews read, merged.
type PullRequests struct {
	API PullAPI
	// Reviewers are the logins whose reviews count; none means anyone
	// with write access.
	Reviewers []string
	// DashboardURL is the dashboard's root the pull request links to
	// (…/dashboard); empty leaves the link out.
	DashboardURL string
	// Now is the clock for rate-limit delays; nil is time.Now.
	Now func() time.Time
}

// PullRequestInput opens or updates a task's pull request.
type PullRequestInput struct {
	TaskID     string `json:"task_id"`
	GitHubRepo string `json:"github_repo"` // HOST/OWNER/NAME
	Branch     string `json:"branch"`
	Base       string `json:"base"`
	// Number is the pull request the task has; 0 finds one for Branch
	// or opens it.
	Number      int      `json:"number,omitempty"`
	Draft       bool     `json:"draft,omitempty"`
	Description string   `json:"description"`
	Criteria    []string `json:"criteria,omitempty"`
	Subtasks    []string `json:"subtasks,omitempty"`
	// Done is how many subtasks are approved; all done ticks the criteria.
	Done int `json:"done"`
	// Ready marks a draft ready for review.
	Ready bool `json:"ready,omitempty"`
}

// PullRequestResult is the task's pull request.
type PullRequestResult struct {
	Number  int    `json:"number"`
	URL     string `json:"url"`
	NodeID  string `json:"node_id"`
	Draft   bool   `json:"draft,omitempty"`
	Created bool   `json:"created,omitempty"`
}

// Sync opens the task's pull request, or finds the one already open for
// its branch (a retry, or a worker that died after opening it), and sets
// its title and body from the plan.
func (p *PullRequests) Sync(ctx context.Context, in PullRequestInput) (PullRequestResult, error) {
	repo, err := p.repo(in.TaskID, in.GitHubRepo)
	if err != nil {
		return PullRequestResult{}, err
	}
	title, body := pullTitle(in), p.pullBody(in)
	var pr github.PullRequest
	created := false
	number := in.Number
	if number == 0 {
		found, err := p.API.FindPull(ctx, repo.Owner, repo.Name, in.Branch)
		if err != nil {
			return PullRequestResult{}, p.apiError(repo, err)
		}
		if found == nil {
			pr, err = p.API.CreatePull(ctx, repo.Owner, repo.Name, github.NewPull{Title: title, Body: body, Head: in.Branch, Base: in.Base, Draft: in.Draft})
			if err != nil {
				return PullRequestResult{}, p.apiError(repo, err)
			}
			created = true
		} else {
			number = found.Number
		}
	}
	if !created {
		if pr, err = p.API.UpdatePull(ctx, repo.Owner, repo.Name, number, title, body); err != nil {
			return PullRequestResult{}, p.apiError(repo, err)
		}
	}
	if in.Ready && pr.Draft {
		if err := p.API.MarkReady(ctx, pr.NodeID); err != nil {
			return PullRequestResult{}, p.apiError(repo, err)
		}
		pr.Draft = false
	}
	return PullRequestResult{Number: pr.Number, URL: pr.URL, NodeID: pr.NodeID, Draft: pr.Draft, Created: created}, nil
}

// pullTitle is the plan's description's first line, at most 72 runes.
func pullTitle(in PullRequestInput) string {
	title, _, _ := strings.Cut(strings.TrimSpace(in.Description), "\n")
	if r := []rune(title); len(r) > 72 {
		title = string(r[:71]) + "…"
	}
	if title == "" {
		title = in.TaskID
	}
	return title + " [" + in.TaskID + "]"
}

// TaskMarker is the line in a pull request's body that names its task:
// the webhook route reads it to find the task to wake.
func TaskMarker(taskID string) string { return "<!-- ampflow-task: " + taskID + " -->" }

func (p *PullRequests) pullBody(in PullRequestInput) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(in.Description) + "\n")
	if len(in.Subtasks) > 0 {
		b.WriteString("\n### Subtasks\n\n")
		for i, s := range in.Subtasks {
			mark := " "
			if i < in.Done {
				mark = "x"
			}
			fmt.Fprintf(&b, "- [%s] %s\n", mark, child.OneLine(s))
		}
	}
	if len(in.Criteria) > 0 {
		b.WriteString("\n### Acceptance criteria\n\n")
		mark := " "
		if in.Done >= len(in.Subtasks) && len(in.Subtasks) > 0 {
			mark = "x"
		}
		for _, c := range in.Criteria {
			fmt.Fprintf(&b, "- [%s] %s\n", mark, child.OneLine(c))
		}
	}
	b.WriteString("\n---\n")
	if p.DashboardURL != "" {
		fmt.Fprintf(&b, "Task [%s](%s/tasks/%s) in ampflow.\n", in.TaskID, strings.TrimRight(p.DashboardURL, "/"), in.TaskID)
	} else {
		fmt.Fprintf(&b, "Task %s in ampflow.\n", in.TaskID)
	}
	b.WriteString(TaskMarker(in.TaskID) + "\n")
	return b.String()
}

// ReviewsInput reads a pull request's reviews.
type ReviewsInput struct {
	TaskID     string `json:"task_id"`
	GitHubRepo string `json:"github_repo"`
	Number     int    `json:"number"`
	// ETag is the one the last read returned: an unchanged list is free.
	ETag string `json:"etag,omitempty"`
	// Taken are the reviews the task has taken already.
	Taken []int64 `json:"taken,omitempty"`
	// Head is the commit approvals must be of.
	Head string `json:"head"`
}

// ReviewsResult holds the reviews not taken yet that count: "changes
// requested" with their comments, and approvals of the head commit.
type ReviewsResult struct {
	ETag        string        `json:"etag,omitempty"`
	NotModified bool          `json:"not_modified,omitempty"`
	Reviews     []TakenReview `json:"reviews,omitempty"`
}

// TakenReview is a GitHub review that counts.
type TakenReview struct {
	ID       int64                  `json:"id"`
	User     string                 `json:"user"`
	State    string                 `json:"state"` // APPROVED or CHANGES_REQUESTED
	Body     string                 `json:"body,omitempty"`
	URL      string                 `json:"url,omitempty"`
	Comments []github.ReviewComment `json:"comments,omitempty"`
}

// Reviews reads the reviews submitted since the last read.
func (p *PullRequests) Reviews(ctx context.Context, in ReviewsInput) (ReviewsResult, error) {
	repo, err := p.repo(in.TaskID, in.GitHubRepo)
	if err != nil {
		return ReviewsResult{}, err
	}
	list, etag, notModified, err := p.API.Reviews(ctx, repo.Owner, repo.Name, in.Number, in.ETag)
	if err != nil {
		return ReviewsResult{}, p.apiError(repo, err)
	}
	res := ReviewsResult{ETag: etag, NotModified: notModified}
	for _, r := range list {
		if slices.Contains(in.Taken, r.ID) {
			continue
		}
		switch r.State {
		case "CHANGES_REQUESTED":
		case "APPROVED":
			if in.Head != "" && r.CommitID != "" && r.CommitID != in.Head {
				continue // an approval of an older round
			}
		default:
			continue
		}
		ok, err := p.counts(ctx, repo, r.User)
		if err != nil {
			return ReviewsResult{}, p.apiError(repo, err)
		}
		if !ok {
			continue
		}
		tr := TakenReview{ID: r.ID, User: r.User, State: r.State, Body: r.Body, URL: r.URL}
		if r.State == "CHANGES_REQUESTED" {
			if tr.Comments, err = p.API.ReviewComments(ctx, repo.Owner, repo.Name, in.Number, r.ID); err != nil {
				return ReviewsResult{}, p.apiError(repo, err)
			}
		}
		res.Reviews = append(res.Reviews, tr)
	}
	return res, nil
}

// counts reports whether a review by user counts.
func (p *PullRequests) counts(ctx context.Context, repo github.Repo, user string) (bool, error) {
	if len(p.Reviewers) > 0 {
		return slices.ContainsFunc(p.Reviewers, func(r string) bool { return strings.EqualFold(r, user) }), nil
	}
	return p.API.CanWrite(ctx, repo.Owner, repo.Name, user)
}

// MergeInput merges a task's pull request.
type MergeInput struct {
	TaskID     string `json:"task_id"`
	GitHubRepo string `json:"github_repo"`
	Number     int    `json:"number"`
	Commit     string `json:"commit"` // the head the merge is of
	Method     string `json:"method"` // squash, merge or rebase
	Title      string `json:"title,omitempty"`
}

// MergeResult is the merge commit, or a conflict for the executor.
type MergeResult struct {
	SHA      string `json:"sha,omitempty"`
	Conflict string `json:"conflict,omitempty"`
}

// Merge merges the pull request. One already merged (a retry) answers
// its merge commit; one GitHub cannot merge is a Conflict, not an error.
func (p *PullRequests) Merge(ctx context.Context, in MergeInput) (MergeResult, error) {
	repo, err := p.repo(in.TaskID, in.GitHubRepo)
	if err != nil {
		return MergeResult{}, err
	}
	pr, err := p.API.GetPull(ctx, repo.Owner, repo.Name, in.Number)
	if err != nil {
		return MergeResult{}, p.apiError(repo, err)
	}
	if pr.Merged {
		return MergeResult{SHA: pr.MergeCommit}, nil
	}
	sha, err := p.API.Merge(ctx, repo.Owner, repo.Name, in.Number, in.Commit, in.Method, in.Title)
	switch {
	case errors.Is(err, github.ErrNotMergeable):
		return MergeResult{Conflict: err.Error()}, nil
	case errors.Is(err, github.ErrHeadModified):
		return MergeResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("merging %s#%d of task %s: the branch moved on from %s on GitHub", repo, in.Number, in.TaskID, ShortHash(in.Commit)), ErrPush, err)
	case err != nil:
		return MergeResult{}, p.apiError(repo, err)
	}
	return MergeResult{SHA: sha}, nil
}

func (p *PullRequests) repo(taskID, full string) (github.Repo, error) {
	repo, ok := github.ParseFullName(full)
	if !ok {
		return github.Repo{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("task %s has no GitHub repository: its origin was not on GitHub when it started (set ci.github.repo)", taskID), ErrDeliveryConfig, nil)
	}
	if p.API == nil {
		return github.Repo{}, temporal.NewNonRetryableApplicationError("pull requests: not configured", ErrDeliveryConfig, nil)
	}
	return repo, nil
}

// apiError: configuration problems are final, rate limits wait for
// their reset, the rest retry.
func (p *PullRequests) apiError(repo github.Repo, err error) error {
	msg := fmt.Sprintf("GitHub %s: %v", repo, err)
	var rl *github.RateLimitedError
	switch {
	case errors.Is(err, github.ErrNoToken), errors.Is(err, github.ErrNotFound), errors.Is(err, github.ErrUnauthorized):
		return temporal.NewNonRetryableApplicationError(msg, ErrDeliveryConfig, err)
	case errors.As(err, &rl):
		now := time.Now
		if p.Now != nil {
			now = p.Now
		}
		return temporal.NewApplicationErrorWithOptions(msg, ErrCIRateLimited, temporal.ApplicationErrorOptions{
			NextRetryDelay: max(rl.RetryAt.Sub(now())+time.Second, time.Second), Cause: err})
	}
	return errors.New(msg)
}
