package githubtest

import (
	"fmt"
	"net/http"
	"slices"
	"time"
)

// GitHub's own merge queue, for a base branch with a merge_queue rule
// (SetRules): enqueuePullRequest adds a pull request, ProcessMergeQueue
// merges what is queued as GitHub does once the merge group's checks
// pass, Dequeue takes one out as a failing merge group would.

func graphqlError(w http.ResponseWriter, r *http.Request, typ, msg string) {
	writeJSON(w, r, http.StatusOK, map[string]any{"errors": []map[string]string{{"type": typ, "message": msg}}})
}

func (s *Server) pullByNode(id string) *Pull {
	for _, p := range s.pulls {
		if p.NodeID == id {
			return p
		}
	}
	return nil
}

func (s *Server) enqueue(w http.ResponseWriter, r *http.Request, id, head string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullByNode(id)
	if p == nil {
		graphqlError(w, r, "NOT_FOUND", fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
		return
	}
	s.refreshLocked(p)
	switch {
	case p.Merged || p.State != "open":
		graphqlError(w, r, "UNPROCESSABLE", "Pull request is not open")
		return
	case !slices.Contains(s.rules[p.Base.Ref], "merge_queue"):
		graphqlError(w, r, "UNPROCESSABLE", "The merge queue is not enabled for "+p.Base.Ref)
		return
	case head != "" && head != p.Head.SHA:
		graphqlError(w, r, "UNPROCESSABLE", "Expected head oid does not match the pull request's head")
		return
	}
	if !slices.Contains(s.queue, p) {
		s.queue = append(s.queue, p)
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"data": map[string]any{
		"enqueuePullRequest": map[string]any{"mergeQueueEntry": map[string]any{"state": "QUEUED", "position": slices.Index(s.queue, p) + 1}}}})
}

func (s *Server) queueEntry(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullByNode(id)
	if p == nil {
		graphqlError(w, r, "NOT_FOUND", fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
		return
	}
	node := map[string]any{"merged": p.Merged, "mergeCommit": nil, "mergeQueueEntry": nil}
	if p.Merged {
		node["mergeCommit"] = map[string]any{"oid": p.MergeCommitSHA}
	}
	if i := slices.Index(s.queue, p); i >= 0 {
		node["mergeQueueEntry"] = map[string]any{"state": "AWAITING_CHECKS", "position": i + 1}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"data": map[string]any{"node": node}})
}

// MergeQueue lists the numbers of the pull requests in the merge queue,
// first first.
func (s *Server) MergeQueue() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, p := range s.queue {
		out = append(out, p.Number)
	}
	return out
}

// ProcessMergeQueue merges the queued pull requests in their order, with
// merge commits, as GitHub does once each merge group's checks pass; one
// that no longer merges is taken out. It returns the numbers merged.
func (s *Server) ProcessMergeQueue() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var merged []int
	for _, p := range s.queue {
		s.refreshLocked(p)
		title := fmt.Sprintf("Merge pull request #%d from %s", p.Number, p.Head.Label)
		sha := fakeSHA(p.Head.SHA, p.Base.SHA, "merge_queue")
		if s.origin != "" {
			var ok bool
			if sha, ok = s.gitMerge(p, "merge", title); !ok {
				continue
			}
		}
		now := time.Now().UTC().Truncate(time.Second)
		p.Merged, p.State, p.MergeCommitSHA, p.MergedAt = true, "closed", sha, &now
		merged = append(merged, p.Number)
	}
	s.queue = nil
	return merged
}

// Dequeue takes pull request number out of the merge queue, as GitHub
// does when its merge group's checks fail.
func (s *Server) Dequeue(number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = slices.DeleteFunc(s.queue, func(p *Pull) bool { return p.Number == number })
}
