package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// ErrRefused is a GraphQL mutation GitHub refused: a pull request not
// open, a merge queue not enabled, a head that moved on.
var ErrRefused = errors.New("GitHub refused the request")

// MergeQueueEntry is a pull request's place in GitHub's merge queue.
type MergeQueueEntry struct {
	// Queued says the pull request is in the queue; State is its entry's
	// state there (QUEUED, AWAITING_CHECKS, MERGEABLE, UNMERGEABLE,
	// LOCKED).
	Queued bool   `json:"queued,omitempty"`
	State  string `json:"state,omitempty"`
	// Merged and MergeCommit are the pull request's once the queue merged
	// it.
	Merged      bool   `json:"merged,omitempty"`
	MergeCommit string `json:"merge_commit,omitempty"`
}

// graphql posts a query to GitHub's GraphQL API and decodes its data
// into out; op names the operation in errors.
func (c *Client) graphql(ctx context.Context, op, query string, vars map[string]any, out any) error {
	if c.token == "" {
		return ErrNoToken
	}
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.graphqlURL(), bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	var resp struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if _, err := c.gh.Do(ctx, req, &resp); err != nil {
		return c.classify(op, err)
	}
	if len(resp.Errors) > 0 {
		if resp.Errors[0].Type == "NOT_FOUND" {
			return fmt.Errorf("%s: %w: %s", op, ErrNotFound, resp.Errors[0].Message)
		}
		return fmt.Errorf("%s: %w: %s", op, ErrRefused, resp.Errors[0].Message)
	}
	if err := json.Unmarshal(resp.Data, out); err != nil {
		return fmt.Errorf("%s: reading the answer: %w", op, err)
	}
	return nil
}

// Enqueue adds the pull request with node id nodeID to its base
// branch's merge queue (the enqueuePullRequest mutation), as long as its
// head is still expectedHead.
func (c *Client) Enqueue(ctx context.Context, nodeID, expectedHead string) (MergeQueueEntry, error) {
	var out struct {
		EnqueuePullRequest struct {
			MergeQueueEntry *struct {
				State string `json:"state"`
			} `json:"mergeQueueEntry"`
		} `json:"enqueuePullRequest"`
	}
	err := c.graphql(ctx, fmt.Sprintf("adding pull request %s to the merge queue", nodeID),
		`mutation($id: ID!, $head: GitObjectID) { enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $head}) { mergeQueueEntry { state } } }`,
		map[string]any{"id": nodeID, "head": expectedHead}, &out)
	if err != nil {
		return MergeQueueEntry{}, err
	}
	e := MergeQueueEntry{}
	if m := out.EnqueuePullRequest.MergeQueueEntry; m != nil {
		e.Queued, e.State = true, m.State
	}
	return e, nil
}

// QueueEntry reads where the pull request with node id nodeID stands in
// its base branch's merge queue: queued, merged, or neither (taken out).
func (c *Client) QueueEntry(ctx context.Context, nodeID string) (MergeQueueEntry, error) {
	var out struct {
		Node struct {
			Merged      bool `json:"merged"`
			MergeCommit *struct {
				OID string `json:"oid"`
			} `json:"mergeCommit"`
			MergeQueueEntry *struct {
				State string `json:"state"`
			} `json:"mergeQueueEntry"`
		} `json:"node"`
	}
	err := c.graphql(ctx, fmt.Sprintf("reading the merge queue entry of pull request %s", nodeID),
		`query($id: ID!) { node(id: $id) { ... on PullRequest { merged mergeCommit { oid } mergeQueueEntry { state } } } }`,
		map[string]any{"id": nodeID}, &out)
	if err != nil {
		return MergeQueueEntry{}, err
	}
	e := MergeQueueEntry{Merged: out.Node.Merged}
	if out.Node.MergeCommit != nil {
		e.MergeCommit = out.Node.MergeCommit.OID
	}
	if m := out.Node.MergeQueueEntry; m != nil {
		e.Queued, e.State = true, m.State
	}
	return e, nil
}
