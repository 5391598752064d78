package github

import (
	"context"
	"fmt"
	"net/url"

	gh "github.com/google/go-github/v74/github"
)

// Issue is what the intake reads of a GitHub issue.
type Issue struct {
	Number    int      `json:"number"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	State     string   `json:"state"`
	Labels    []string `json:"labels"`
	Assignees []string `json:"assignees"`
	URL       string   `json:"url"`
}

// IssueQuery picks the open issues of Issues: those with Label and those
// assigned to Assignee (each when set).
type IssueQuery struct {
	Label, Assignee string
}

func issueOf(i *gh.Issue) Issue {
	out := Issue{Number: i.GetNumber(), Title: i.GetTitle(), Body: i.GetBody(), State: i.GetState(), URL: i.GetHTMLURL()}
	for _, l := range i.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	for _, a := range i.Assignees {
		out.Assignees = append(out.Assignees, a.GetLogin())
	}
	return out
}

// Issues lists the open issues of owner/repo that q picks, pull requests
// left out. With the ETag of an earlier call, an unchanged list answers
// notModified and costs no rate limit; etag is the list's new ETag.
func (c *Client) Issues(ctx context.Context, owner, repo string, q IssueQuery, ifNoneMatch string) (issues []Issue, etag string, notModified bool, err error) {
	if c.token == "" {
		return nil, "", false, ErrNoToken
	}
	op := fmt.Sprintf("listing the issues of %s/%s", owner, repo)
	v := url.Values{"state": {"open"}, "per_page": {"100"}}
	if q.Label != "" {
		v.Set("labels", q.Label)
	}
	if q.Assignee != "" {
		v.Set("assignee", q.Assignee)
	}
	list, etag, notModified, err := listETag[*gh.Issue](ctx, c, op, ifNoneMatch, func(page int) string {
		v.Set("page", fmt.Sprint(page))
		return fmt.Sprintf("repos/%s/%s/issues?%s", owner, repo, v.Encode())
	})
	if err != nil || notModified {
		return nil, etag, notModified, err
	}
	for _, i := range list {
		if !i.IsPullRequest() {
			issues = append(issues, issueOf(i))
		}
	}
	return issues, etag, false, nil
}

// GetIssue reads one issue.
func (c *Client) GetIssue(ctx context.Context, owner, repo string, number int) (Issue, error) {
	if c.token == "" {
		return Issue{}, ErrNoToken
	}
	i, _, err := c.gh.Issues.Get(ctx, owner, repo, number)
	if err != nil {
		return Issue{}, c.classify(fmt.Sprintf("reading issue %s/%s#%d", owner, repo, number), err)
	}
	return issueOf(i), nil
}

// IssueComments lists the bodies of an issue's comments, oldest first.
func (c *Client) IssueComments(ctx context.Context, owner, repo string, number int) ([]string, error) {
	if c.token == "" {
		return nil, ErrNoToken
	}
	op := fmt.Sprintf("listing the comments of %s/%s#%d", owner, repo, number)
	var out []string
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		list, resp, err := c.gh.Issues.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return nil, c.classify(op, err)
		}
		for _, cm := range list {
			out = append(out, cm.GetBody())
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CommentIssue comments body on an issue.
func (c *Client) CommentIssue(ctx context.Context, owner, repo string, number int, body string) error {
	if c.token == "" {
		return ErrNoToken
	}
	_, _, err := c.gh.Issues.CreateComment(ctx, owner, repo, number, &gh.IssueComment{Body: &body})
	if err != nil {
		return c.classify(fmt.Sprintf("commenting on %s/%s#%d", owner, repo, number), err)
	}
	return nil
}

// CloseIssue closes an issue as completed.
func (c *Client) CloseIssue(ctx context.Context, owner, repo string, number int) error {
	if c.token == "" {
		return ErrNoToken
	}
	state, reason := "closed", "completed"
	_, _, err := c.gh.Issues.Edit(ctx, owner, repo, number, &gh.IssueRequest{State: &state, StateReason: &reason})
	if err != nil {
		return c.classify(fmt.Sprintf("closing %s/%s#%d", owner, repo, number), err)
	}
	return nil
}
