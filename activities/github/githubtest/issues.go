package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Issue is an issue as the REST API shows it. Issues are numbered from
// 100 in each repository, apart from the pull requests.
type Issue struct {
	ID        int64     `json:"id"`
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	State     string    `json:"state"`
	Labels    []Label   `json:"labels"`
	Assignees []User    `json:"assignees"`
	User      User      `json:"user"`
	HTMLURL   string    `json:"html_url"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	owner, repo string
	comments    []*IssueComment
}

// Label is an issue's label.
type Label struct {
	Name string `json:"name"`
}

// IssueComment is a comment on an issue.
type IssueComment struct {
	ID        int64     `json:"id"`
	Body      string    `json:"body"`
	User      User      `json:"user"`
	HTMLURL   string    `json:"html_url"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *Server) issueRoutes(api *http.ServeMux) {
	api.HandleFunc("GET /repos/{owner}/{repo}/issues", s.listIssues)
	api.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}", s.getIssue)
	api.HandleFunc("PATCH /repos/{owner}/{repo}/issues/{number}", s.updateIssue)
	api.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}/comments", s.listIssueComments)
	api.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/comments", s.createIssueComment)
}

// AddIssue opens an issue in owner/repo with labels and assignees.
func (s *Server) AddIssue(owner, repo, title, body string, labels, assignees []string) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 100
	for _, is := range s.issues {
		if is.owner == owner && is.repo == repo {
			n = max(n, is.Number+1)
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	is := &Issue{ID: s.id(), Number: n, Title: title, Body: body, State: "open", Labels: []Label{}, Assignees: []User{},
		User: User{Login: "octo-reporter", ID: 7, Type: "User"}, CreatedAt: now, UpdatedAt: now, owner: owner, repo: repo}
	is.URL = fmt.Sprintf("%s/api/v3/repos/%s/%s/issues/%d", s.URL, owner, repo, n)
	is.HTMLURL = fmt.Sprintf("%s/%s/%s/issues/%d", s.URL, owner, repo, n)
	for _, l := range labels {
		is.Labels = append(is.Labels, Label{Name: l})
	}
	for _, a := range assignees {
		is.Assignees = append(is.Assignees, User{Login: a, ID: s.id(), Type: "User"})
	}
	s.issues = append(s.issues, is)
	return *is
}

// LabelIssue adds a label to an issue, as a person does on GitHub, and
// returns the "issues" webhook delivery's body (action labeled) that
// GitHub would send for it.
func (s *Server) LabelIssue(owner, repo string, number int, label string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issueLocked(owner, repo, number)
	if is == nil {
		panic(fmt.Sprintf("githubtest: no issue %s/%s#%d", owner, repo, number))
	}
	if !slices.ContainsFunc(is.Labels, func(l Label) bool { return l.Name == label }) {
		is.Labels = append(is.Labels, Label{Name: label})
		is.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	}
	b, _ := json.Marshal(map[string]any{
		"action": "labeled", "issue": is, "label": Label{Name: label},
		"repository": map[string]any{"full_name": owner + "/" + repo, "name": repo, "owner": User{Login: owner}},
		"sender":     User{Login: "octo-reporter", ID: 7, Type: "User"},
	})
	return b
}

// Issue returns an issue as it is now.
func (s *Server) Issue(owner, repo string, number int) (Issue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issueLocked(owner, repo, number); is != nil {
		return *is, true
	}
	return Issue{}, false
}

// IssueComments returns the comments on an issue, oldest first.
func (s *Server) IssueComments(owner, repo string, number int) []IssueComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []IssueComment
	if is := s.issueLocked(owner, repo, number); is != nil {
		for _, c := range is.comments {
			out = append(out, *c)
		}
	}
	return out
}

func (s *Server) issueLocked(owner, repo string, number int) *Issue {
	for _, is := range s.issues {
		if is.owner == owner && is.repo == repo && is.Number == number {
			return is
		}
	}
	return nil
}

func (s *Server) issueOf(w http.ResponseWriter, r *http.Request) *Issue {
	n, _ := strconv.Atoi(r.PathValue("number"))
	is := s.issueLocked(r.PathValue("owner"), r.PathValue("repo"), n)
	if is == nil {
		writeError(w, r, http.StatusNotFound, "Not Found")
	}
	return is
}

// listIssues filters as GitHub does by state (open by default), labels
// (all of a comma-separated list) and assignee.
func (s *Server) listIssues(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var labels []string
	if l := q.Get("labels"); l != "" {
		labels = strings.Split(l, ",")
	}
	assignee := q.Get("assignee")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*Issue{}
	for _, is := range s.issues {
		if is.owner != r.PathValue("owner") || is.repo != r.PathValue("repo") || (state != "all" && is.State != state) {
			continue
		}
		has := true
		for _, l := range labels {
			has = has && slices.ContainsFunc(is.Labels, func(x Label) bool { return strings.EqualFold(x.Name, l) })
		}
		if assignee != "" && !slices.ContainsFunc(is.Assignees, func(u User) bool { return strings.EqualFold(u.Login, assignee) }) {
			has = false
		}
		if has {
			out = append(out, is)
		}
	}
	writeJSON(w, r, http.StatusOK, out)
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issueOf(w, r); is != nil {
		writeJSON(w, r, http.StatusOK, is)
	}
}

func (s *Server) updateIssue(w http.ResponseWriter, r *http.Request) {
	var in struct {
		State       *string `json:"state"`
		StateReason *string `json:"state_reason"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, r, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issueOf(w, r)
	if is == nil {
		return
	}
	if in.State != nil {
		if *in.State != "open" && *in.State != "closed" {
			writeError(w, r, http.StatusUnprocessableEntity, "Validation Failed: state")
			return
		}
		is.State = *in.State
	}
	is.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	writeJSON(w, r, http.StatusOK, is)
}

func (s *Server) listIssueComments(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issueOf(w, r); is != nil {
		writeJSON(w, r, http.StatusOK, append([]*IssueComment{}, is.comments...))
	}
}

func (s *Server) createIssueComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
		writeError(w, r, http.StatusUnprocessableEntity, "Validation Failed: body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issueOf(w, r)
	if is == nil {
		return
	}
	c := &IssueComment{ID: s.id(), Body: in.Body, User: User{Login: "ampflow-bot", ID: 1, Type: "Bot"}, CreatedAt: time.Now().UTC()}
	c.HTMLURL = fmt.Sprintf("%s#issuecomment-%d", is.HTMLURL, c.ID)
	is.comments = append(is.comments, c)
	writeJSON(w, r, http.StatusCreated, c)
}
