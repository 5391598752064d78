package githubtest

import (
	"fmt"
	"net/http"
	"strings"
)

// SetRules makes the rules of the given types (merge_queue,
// pull_request, required_status_checks, ...) apply to branch, as a
// repository ruleset would; none clears them.
func (s *Server) SetRules(branch string, types ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rules == nil {
		s.rules = map[string][]string{}
	}
	s.rules[branch] = types
}

func (s *Server) branchRoutes(api *http.ServeMux) {
	api.HandleFunc("GET /repos/{owner}/{repo}/git/ref/{ref...}", s.getRef)
	api.HandleFunc("GET /repos/{owner}/{repo}/rules/branches/{branch...}", s.branchRules)
}

// getRef answers a ref of the origin repository as GitHub's git
// database API does: 404 for a ref that is not there.
func (s *Server) getRef(w http.ResponseWriter, r *http.Request) {
	owner, repo, ref := r.PathValue("owner"), r.PathValue("repo"), "refs/"+strings.TrimPrefix(r.PathValue("ref"), "refs/")
	s.mu.Lock()
	sha := s.revParse(ref)
	s.mu.Unlock()
	if sha == "" {
		writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{
		"ref": ref, "node_id": "REF_" + sha[:12],
		"url": fmt.Sprintf("%s/api/v3/repos/%s/%s/git/%s", s.URL, owner, repo, ref),
		"object": map[string]string{"type": "commit", "sha": sha,
			"url": fmt.Sprintf("%s/api/v3/repos/%s/%s/git/commits/%s", s.URL, owner, repo, sha)},
	})
}

// branchRules lists the rules that apply to a branch, each with the
// ruleset it comes from, as GitHub does; an empty list when none do.
func (s *Server) branchRules(w http.ResponseWriter, r *http.Request) {
	owner, repo, branch := r.PathValue("owner"), r.PathValue("repo"), r.PathValue("branch")
	s.mu.Lock()
	types := s.rules[branch]
	s.mu.Unlock()
	out := []map[string]any{}
	for i, typ := range types {
		rule := map[string]any{"type": typ, "ruleset_source_type": "Repository", "ruleset_source": owner + "/" + repo, "ruleset_id": 42 + i}
		if typ == "merge_queue" {
			rule["parameters"] = map[string]any{"merge_method": "MERGE", "grouping_strategy": "ALLGREEN",
				"max_entries_to_build": 5, "max_entries_to_merge": 5, "min_entries_to_merge": 1,
				"min_entries_to_merge_wait_minutes": 5, "check_response_timeout_minutes": 60}
		}
		out = append(out, rule)
	}
	lo, hi := s.page(w, r, len(out))
	writeJSON(w, r, http.StatusOK, out[lo:hi])
}
