package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v74/github"
)

// ErrNotMergeable is a merge GitHub refused because the pull request
// cannot be merged as it is (405: a conflict, or a rule not met).
var ErrNotMergeable = errors.New("pull request is not mergeable")

// ErrHeadModified is a merge GitHub refused because the head moved on
// from the commit the merge named (409).
var ErrHeadModified = errors.New("pull request head was modified")

// PullRequest is what ampflow keeps of a pull request.
type PullRequest struct {
	Number  int    `json:"number"`
	URL     string `json:"url"` // the web page
	NodeID  string `json:"node_id"`
	Draft   bool   `json:"draft,omitempty"`
	State   string `json:"state"`
	Merged  bool   `json:"merged,omitempty"`
	HeadSHA string `json:"head_sha,omitempty"`
	// MergeCommit is the merge commit of a merged pull request.
	MergeCommit string `json:"merge_commit,omitempty"`
}

func pullOf(p *gh.PullRequest) PullRequest {
	return PullRequest{Number: p.GetNumber(), URL: p.GetHTMLURL(), NodeID: p.GetNodeID(), Draft: p.GetDraft(),
		State: p.GetState(), Merged: p.GetMerged(), HeadSHA: p.GetHead().GetSHA(), MergeCommit: p.GetMergeCommitSHA()}
}

// NewPull is a pull request to open.
type NewPull struct {
	Title, Body string
	Head, Base  string // branch names
	Draft       bool
}

// FindPull returns the open pull request whose head is branch of owner's
// repository, or nil.
func (c *Client) FindPull(ctx context.Context, owner, repo, branch string) (*PullRequest, error) {
	if c.token == "" {
		return nil, ErrNoToken
	}
	opts := &gh.PullRequestListOptions{State: "open", Head: owner + ":" + branch, ListOptions: gh.ListOptions{PerPage: 10}}
	pulls, _, err := c.gh.PullRequests.List(ctx, owner, repo, opts)
	if err != nil {
		return nil, c.classify(fmt.Sprintf("listing pull requests of %s/%s for %s", owner, repo, branch), err)
	}
	if len(pulls) == 0 {
		return nil, nil
	}
	p := pullOf(pulls[0])
	return &p, nil
}

// CreatePull opens a pull request.
func (c *Client) CreatePull(ctx context.Context, owner, repo string, np NewPull) (PullRequest, error) {
	if c.token == "" {
		return PullRequest{}, ErrNoToken
	}
	p, _, err := c.gh.PullRequests.Create(ctx, owner, repo, &gh.NewPullRequest{
		Title: gh.Ptr(np.Title), Body: gh.Ptr(np.Body), Head: gh.Ptr(np.Head), Base: gh.Ptr(np.Base), Draft: gh.Ptr(np.Draft),
	})
	if err != nil {
		return PullRequest{}, c.classify(fmt.Sprintf("opening a pull request of %s on %s/%s", np.Head, owner, repo), err)
	}
	return pullOf(p), nil
}

// GetPull reads a pull request.
func (c *Client) GetPull(ctx context.Context, owner, repo string, number int) (PullRequest, error) {
	if c.token == "" {
		return PullRequest{}, ErrNoToken
	}
	p, _, err := c.gh.PullRequests.Get(ctx, owner, repo, number)
	if err != nil {
		return PullRequest{}, c.classify(fmt.Sprintf("reading pull request %s/%s#%d", owner, repo, number), err)
	}
	return pullOf(p), nil
}

// UpdatePull sets a pull request's title and body.
func (c *Client) UpdatePull(ctx context.Context, owner, repo string, number int, title, body string) (PullRequest, error) {
	if c.token == "" {
		return PullRequest{}, ErrNoToken
	}
	p, _, err := c.gh.PullRequests.Edit(ctx, owner, repo, number, &gh.PullRequest{Title: gh.Ptr(title), Body: gh.Ptr(body)})
	if err != nil {
		return PullRequest{}, c.classify(fmt.Sprintf("updating pull request %s/%s#%d", owner, repo, number), err)
	}
	return pullOf(p), nil
}

// MarkReady turns a draft pull request ready for review. GitHub offers
// this only in GraphQL (markPullRequestReadyForReview).
func (c *Client) MarkReady(ctx context.Context, nodeID string) error {
	if c.token == "" {
		return ErrNoToken
	}
	q := map[string]any{
		"query":     `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }`,
		"variables": map[string]any{"id": nodeID},
	}
	b, _ := json.Marshal(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.graphqlURL(), bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("marking pull request %s ready: %w", nodeID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	var out struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if _, err := c.gh.Do(ctx, req, &out); err != nil {
		return c.classify(fmt.Sprintf("marking pull request %s ready", nodeID), err)
	}
	if len(out.Errors) > 0 {
		return fmt.Errorf("marking pull request %s ready: %s", nodeID, out.Errors[0].Message)
	}
	return nil
}

// graphqlURL is /graphql beside the REST root: api.github.com/graphql, or
// HOST/api/graphql on GitHub Enterprise.
func (c *Client) graphqlURL() string {
	base := c.gh.BaseURL.String()
	if strings.HasSuffix(base, "/api/v3/") {
		return strings.TrimSuffix(base, "v3/") + "graphql"
	}
	return strings.TrimSuffix(base, "/") + "/graphql"
}

// Review is a submitted pull request review.
type Review struct {
	ID       int64  `json:"id"`
	User     string `json:"user"`
	State    string `json:"state"` // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
	Body     string `json:"body,omitempty"`
	CommitID string `json:"commit_id,omitempty"`
	URL      string `json:"url,omitempty"`
}

// ReviewComment is a comment on a line of the diff.
type ReviewComment struct {
	ID   int64  `json:"id"`
	Path string `json:"path"`
	Line int    `json:"line"`
	Body string `json:"body"`
	User string `json:"user"`
}

// Reviews lists the reviews of a pull request. With the ETag of an
// earlier call, an unchanged list answers notModified and costs no rate
// limit; etag is the list's new ETag.
func (c *Client) Reviews(ctx context.Context, owner, repo string, number int, ifNoneMatch string) (reviews []Review, etag string, notModified bool, err error) {
	if c.token == "" {
		return nil, "", false, ErrNoToken
	}
	op := fmt.Sprintf("listing the reviews of %s/%s#%d", owner, repo, number)
	list, etag, notModified, err := listETag[*gh.PullRequestReview](ctx, c, op, ifNoneMatch, func(page int) string {
		return fmt.Sprintf("repos/%s/%s/pulls/%d/reviews?per_page=100&page=%d", owner, repo, number, page)
	})
	if err != nil || notModified {
		return nil, etag, notModified, err
	}
	for _, r := range list {
		reviews = append(reviews, Review{ID: r.GetID(), User: r.GetUser().GetLogin(), State: r.GetState(),
			Body: r.GetBody(), CommitID: r.GetCommitID(), URL: r.GetHTMLURL()})
	}
	return reviews, etag, false, nil
}

// listETag reads every page of a listing, the first asked with
// If-None-Match: ifNoneMatch. A 304 answers notModified with ifNoneMatch
// as the etag; otherwise the etag is the first page's.
func listETag[T any](ctx context.Context, c *Client, op, ifNoneMatch string, url func(page int) string) (all []T, etag string, notModified bool, err error) {
	page := 1
	for {
		req, err := c.gh.NewRequest(http.MethodGet, url(page), nil)
		if err != nil {
			return nil, "", false, fmt.Errorf("%s: %w", op, err)
		}
		if page == 1 && ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		var list []T
		resp, err := c.gh.Do(ctx, req, &list)
		if resp != nil && resp.StatusCode == http.StatusNotModified {
			return nil, ifNoneMatch, true, nil
		}
		if err != nil {
			return nil, "", false, c.classify(op, err)
		}
		if page == 1 {
			etag = resp.Header.Get("ETag")
		}
		all = append(all, list...)
		if resp.NextPage == 0 {
			return all, etag, false, nil
		}
		page = resp.NextPage
	}
}

// ReviewComments lists the line comments of one review.
func (c *Client) ReviewComments(ctx context.Context, owner, repo string, number int, reviewID int64) ([]ReviewComment, error) {
	if c.token == "" {
		return nil, ErrNoToken
	}
	var out []ReviewComment
	opts := &gh.ListOptions{PerPage: 100}
	for {
		list, resp, err := c.gh.PullRequests.ListReviewComments(ctx, owner, repo, number, reviewID, opts)
		if err != nil {
			return nil, c.classify(fmt.Sprintf("listing the comments of review %d on %s/%s#%d", reviewID, owner, repo, number), err)
		}
		for _, cm := range list {
			line := cm.GetLine()
			if line == 0 {
				line = cm.GetOriginalLine()
			}
			out = append(out, ReviewComment{ID: cm.GetID(), Path: cm.GetPath(), Line: line, Body: cm.GetBody(), User: cm.GetUser().GetLogin()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CanWrite reports whether user may push to the repository (write,
// maintain or admin).
func (c *Client) CanWrite(ctx context.Context, owner, repo, user string) (bool, error) {
	if c.token == "" {
		return false, ErrNoToken
	}
	p, _, err := c.gh.Repositories.GetPermissionLevel(ctx, owner, repo, user)
	if err != nil {
		return false, c.classify(fmt.Sprintf("reading the permission of %s on %s/%s", user, owner, repo), err)
	}
	switch p.GetPermission() {
	case "admin", "maintain", "write":
		return true, nil
	}
	return false, nil
}

// Merge merges a pull request whose head is sha, by method (merge,
// squash or rebase), and returns the merge commit.
func (c *Client) Merge(ctx context.Context, owner, repo string, number int, sha, method, title string) (string, error) {
	if c.token == "" {
		return "", ErrNoToken
	}
	res, _, err := c.gh.PullRequests.Merge(ctx, owner, repo, number, "", &gh.PullRequestOptions{SHA: sha, MergeMethod: method, CommitTitle: title})
	if err != nil {
		op := fmt.Sprintf("merging %s/%s#%d", owner, repo, number)
		var er *gh.ErrorResponse
		if errors.As(err, &er) && er.Response != nil {
			switch er.Response.StatusCode {
			case http.StatusMethodNotAllowed:
				return "", fmt.Errorf("%s: %w: %s", op, ErrNotMergeable, er.Message)
			case http.StatusConflict:
				return "", fmt.Errorf("%s: %w: %s", op, ErrHeadModified, er.Message)
			}
		}
		return "", c.classify(op, err)
	}
	return res.GetSHA(), nil
}
