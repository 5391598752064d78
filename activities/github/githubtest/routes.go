package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func (s *Server) handler() http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.createPull)
	api.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.listPulls)
	api.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}", s.getPull)
	api.HandleFunc("PATCH /repos/{owner}/{repo}/pulls/{number}", s.updatePull)
	api.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/reviews", s.listReviews)
	api.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/reviews/{id}/comments", s.listReviewComments)
	api.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/comments", s.listPullComments)
	api.HandleFunc("PUT /repos/{owner}/{repo}/pulls/{number}/merge", s.merge)
	api.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", s.listCheckRuns)
	api.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/status", s.combinedStatus)
	api.HandleFunc("GET /repos/{owner}/{repo}/check-runs/{id}/annotations", s.listAnnotations)
	api.HandleFunc("GET /repos/{owner}/{repo}/actions/jobs/{id}", s.getJob)
	api.HandleFunc("GET /repos/{owner}/{repo}/actions/jobs/{id}/logs", s.jobLogs)
	api.HandleFunc("GET /repos/{owner}/{repo}/collaborators/{user}/permission", s.permission)
	s.issueRoutes(api)
	s.branchRoutes(api)

	root := http.NewServeMux()
	root.Handle("/api/v3/", s.authed(http.StripPrefix("/api/v3", api)))
	root.Handle("POST /api/graphql", s.authed(http.HandlerFunc(s.graphql)))
	// Where the job log redirect points: a pre-signed URL, no token.
	root.HandleFunc("GET /_logs/{id}", s.logFile)
	return root
}

// authed records the request and refuses a wrong token as GitHub does.
func (s *Server) authed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: string(body)})
		token, hook := s.token, s.hook
		failWith := 0
		for _, f := range s.faults {
			if f.n > 0 && strings.Contains(r.URL.Path, f.part) {
				f.n--
				failWith = f.status
				break
			}
		}
		s.mu.Unlock()
		if hook != nil && hook(w, r) {
			return
		}
		if failWith != 0 {
			writeError(w, r, failWith, http.StatusText(failWith))
			return
		}
		if token != "" {
			got := r.Header.Get("Authorization")
			if got != "Bearer "+token && got != "token "+token {
				writeError(w, r, http.StatusUnauthorized, "Bad credentials")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) pullOf(w http.ResponseWriter, r *http.Request) *Pull {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil {
		writeError(w, r, http.StatusNotFound, "Not Found")
		return nil
	}
	p := s.pullLocked(r.PathValue("owner"), r.PathValue("repo"), n)
	if p == nil {
		writeError(w, r, http.StatusNotFound, "Not Found")
		return nil
	}
	s.refreshLocked(p)
	return p
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Draft bool   `json:"draft"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, r, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	head := in.Head
	if _, branch, ok := strings.Cut(in.Head, ":"); ok {
		head = branch
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.Title == "" || head == "" || in.Base == "" {
		writeError(w, r, http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	for _, p := range s.pulls {
		if p.owner == owner && p.repo == repo && p.State == "open" && p.Head.Ref == head && p.Base.Ref == in.Base {
			writeError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("Validation Failed: A pull request already exists for %s:%s.", owner, head))
			return
		}
	}
	if s.origin != "" && s.revParse("refs/heads/"+head) == "" {
		writeError(w, r, http.StatusUnprocessableEntity, "Validation Failed: head: invalid")
		return
	}
	now := time.Now().UTC().Truncate(time.Second)
	n := 1
	for _, p := range s.pulls {
		if p.owner == owner && p.repo == repo {
			n = max(n, p.Number+1)
		}
	}
	p := &Pull{ID: s.id(), Number: n, State: "open", Title: in.Title, Body: in.Body, Draft: in.Draft,
		Head: Branch{Label: owner + ":" + head, Ref: head}, Base: Branch{Label: owner + ":" + in.Base, Ref: in.Base},
		User: User{Login: "ampflow-bot", ID: 1, Type: "Bot"}, CreatedAt: now, UpdatedAt: now, owner: owner, repo: repo}
	p.NodeID = "PR_" + strconv.FormatInt(p.ID, 10)
	p.URL = fmt.Sprintf("%s/api/v3/repos/%s/%s/pulls/%d", s.URL, owner, repo, n)
	p.HTMLURL = fmt.Sprintf("%s/%s/%s/pull/%d", s.URL, owner, repo, n)
	s.refreshLocked(p)
	s.pulls = append(s.pulls, p)
	writeJSON(w, r, http.StatusCreated, p)
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*Pull{}
	for _, p := range s.pulls {
		if p.owner != owner || p.repo != repo || (state != "all" && p.State != state) {
			continue
		}
		if h := q.Get("head"); h != "" && h != p.Head.Label {
			continue
		}
		if b := q.Get("base"); b != "" && b != p.Base.Ref {
			continue
		}
		s.refreshLocked(p)
		out = append(out, p)
	}
	writeJSON(w, r, http.StatusOK, out)
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pullOf(w, r); p != nil {
		mergeable := !s.conflicts[p.Number]
		p.Mergeable = &mergeable
		writeJSON(w, r, http.StatusOK, p)
	}
}

func (s *Server) updatePull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, r, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullOf(w, r)
	if p == nil {
		return
	}
	if in.Title != nil {
		p.Title = *in.Title
	}
	if in.Body != nil {
		p.Body = *in.Body
	}
	if in.State != nil && !p.Merged {
		p.State = *in.State
	}
	if in.Base != nil {
		p.Base.Ref = *in.Base
	}
	p.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	writeJSON(w, r, http.StatusOK, p)
}

func (s *Server) listReviews(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pullOf(w, r); p != nil {
		out := append([]*Review{}, s.reviews[p.Number]...)
		writeJSON(w, r, http.StatusOK, out)
	}
}

func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullOf(w, r)
	if p == nil {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	out := []*ReviewComment{}
	found := false
	for _, rv := range s.reviews[p.Number] {
		found = found || rv.ID == id
	}
	if !found {
		writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	for _, c := range s.comments[p.Number] {
		if c.ReviewID == id {
			out = append(out, c)
		}
	}
	writeJSON(w, r, http.StatusOK, out)
}

func (s *Server) listPullComments(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pullOf(w, r); p != nil {
		writeJSON(w, r, http.StatusOK, append([]*ReviewComment{}, s.comments[p.Number]...))
	}
}

// merge merges as GitHub does: 405 when the pull request cannot be
// merged (a conflict), 409 when sha is not the head any more. With an
// origin, the base branch moves to a real merge (or squash) commit.
func (s *Server) merge(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title  string `json:"commit_title"`
		SHA    string `json:"sha"`
		Method string `json:"merge_method"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullOf(w, r)
	if p == nil {
		return
	}
	switch {
	case p.Merged || p.State != "open":
		writeError(w, r, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	case p.Draft:
		writeError(w, r, http.StatusMethodNotAllowed, "Pull Request is still a draft")
		return
	case in.SHA != "" && in.SHA != p.Head.SHA:
		writeError(w, r, http.StatusConflict, "Head branch was modified. Review and try the merge again.")
		return
	case s.conflicts[p.Number]:
		writeError(w, r, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	}
	if in.Title == "" {
		in.Title = fmt.Sprintf("%s (#%d)", p.Title, p.Number)
	}
	sha := fakeSHA(p.Head.SHA, p.Base.SHA, in.Method)
	if s.origin != "" {
		merged, ok := s.gitMerge(p, in.Method, in.Title)
		if !ok {
			writeError(w, r, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
			return
		}
		sha = merged
	}
	now := time.Now().UTC().Truncate(time.Second)
	p.Merged, p.State, p.MergeCommitSHA, p.MergedAt = true, "closed", sha, &now
	writeJSON(w, r, http.StatusOK, map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"})
}

// gitMerge writes the merge into origin with git merge-tree; false is a
// conflict. squash and rebase both write one commit on the base.
func (s *Server) gitMerge(p *Pull, method, title string) (string, bool) {
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"--git-dir", s.origin}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	out, err := git("merge-tree", "--write-tree", p.Base.SHA, p.Head.SHA)
	if err != nil {
		return "", false
	}
	tree, _, _ := strings.Cut(out, "\n")
	args := []string{"-c", "user.name=GitHub", "-c", "user.email=noreply@github.com", "commit-tree", tree, "-p", p.Base.SHA}
	if method == "" || method == "merge" {
		args = append(args, "-p", p.Head.SHA)
	}
	commit, err := git(append(args, "-m", title)...)
	if err != nil {
		return "", false
	}
	if _, err := git("update-ref", "refs/heads/"+p.Base.Ref, commit, p.Base.SHA); err != nil {
		return "", false
	}
	return commit, true
}

func (s *Server) resolve(ref string) string {
	if sha := s.revParse(ref); sha != "" {
		return sha
	}
	return ref
}

// page is the slice [lo, hi) of a list of n that the request's page and
// per_page ask for (per_page capped at Options.PageSize), and links the
// next page, if any, as GitHub does.
func (s *Server) page(w http.ResponseWriter, r *http.Request, n int) (lo, hi int) {
	q := r.URL.Query()
	size, _ := strconv.Atoi(q.Get("per_page"))
	if size <= 0 {
		size = 30
	}
	if s.pageSize > 0 {
		size = min(size, s.pageSize)
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo, hi = min((page-1)*size, n), min(page*size, n)
	if hi < n {
		q.Set("page", strconv.Itoa(page+1))
		w.Header().Set("Link", fmt.Sprintf(`<%s/api/v3%s?%s>; rel="next"`, s.URL, r.URL.Path, q.Encode()))
	}
	return lo, hi
}

func (s *Server) permission(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	s.mu.Lock()
	perm, ok := s.permissions[user]
	s.mu.Unlock()
	if !ok {
		perm = "read"
	}
	// The legacy field folds maintain into write and triage into read.
	legacy := perm
	switch perm {
	case "maintain":
		legacy = "write"
	case "triage":
		legacy = "read"
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"permission": legacy, "role_name": perm, "user": User{Login: user, Type: "User"}})
}

// graphql answers the markPullRequestReadyForReview mutation, the only
// way GitHub offers to turn a draft into a ready pull request, and the
// merge queue's enqueuePullRequest and a pull request's mergeQueueEntry.
func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, r, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	id, _ := in.Variables["id"].(string)
	switch {
	case strings.Contains(in.Query, "enqueuePullRequest"):
		head, _ := in.Variables["head"].(string)
		s.enqueue(w, r, id, head)
		return
	case strings.Contains(in.Query, "mergeQueueEntry"):
		s.queueEntry(w, r, id)
		return
	case !strings.Contains(in.Query, "markPullRequestReadyForReview"):
		writeJSON(w, r, http.StatusOK, map[string]any{"errors": []map[string]string{{"message": "githubtest: unsupported query"}}})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pulls {
		if p.NodeID == id {
			p.Draft = false
			writeJSON(w, r, http.StatusOK, map[string]any{"data": map[string]any{
				"markPullRequestReadyForReview": map[string]any{"pullRequest": map[string]any{"isDraft": false, "number": p.Number}}}})
			return
		}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"errors": []map[string]string{{"type": "NOT_FOUND", "message": fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id)}}})
}
