package github

import (
	"context"
	"fmt"
	"net/http"
)

// BranchHead reads the commit a branch is at on GitHub
// (GET /repos/{owner}/{repo}/git/ref/heads/{branch}).
func (c *Client) BranchHead(ctx context.Context, owner, repo, branch string) (string, error) {
	if c.token == "" {
		return "", ErrNoToken
	}
	ref, _, err := c.gh.Git.GetRef(ctx, owner, repo, "heads/"+branch)
	if err != nil {
		return "", c.classify(fmt.Sprintf("reading branch %s of %s/%s", branch, owner, repo), err)
	}
	return ref.GetObject().GetSHA(), nil
}

// RuleMergeQueue is the type of the branch rule that puts a branch
// behind GitHub's own merge queue.
const RuleMergeQueue = "merge_queue"

// BranchRules lists the types of the rules that apply to a branch
// (GET /repos/{owner}/{repo}/rules/branches/{branch}), such as
// RuleMergeQueue; a rule set by several rulesets is listed once.
func (c *Client) BranchRules(ctx context.Context, owner, repo, branch string) ([]string, error) {
	if c.token == "" {
		return nil, ErrNoToken
	}
	op := fmt.Sprintf("reading the rules of branch %s of %s/%s", branch, owner, repo)
	var types []string
	seen := map[string]bool{}
	for page := 1; page != 0; {
		req, err := c.gh.NewRequest(http.MethodGet,
			fmt.Sprintf("repos/%s/%s/rules/branches/%s?per_page=100&page=%d", owner, repo, escapeRef(branch), page), nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		var rules []struct {
			Type string `json:"type"`
		}
		resp, err := c.gh.Do(ctx, req, &rules)
		if err != nil {
			return nil, c.classify(op, err)
		}
		for _, r := range rules {
			if !seen[r.Type] {
				seen[r.Type] = true
				types = append(types, r.Type)
			}
		}
		page = resp.NextPage
	}
	return types, nil
}
