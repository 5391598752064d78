// Package githubtest serves a fake of the parts of GitHub's REST API that
// ampflow uses — pull requests, reviews and their comments, check runs
// with their output, annotations and job logs, merges, the heads and
// rules of branches, issues with their labels, assignees and comments —
// plus the GraphQL mutation that marks a draft ready and those of the
// merge queue (mergequeue.go). Responses follow the shapes
// of GitHub's REST documentation; GETs carry an ETag and answer 304 to a
// matching If-None-Match, as GitHub does.
//
// The server answers under /api/v3/ and /api/graphql, the paths of a
// GitHub Enterprise server, so a client pointed at its URL as an
// Enterprise base URL reaches it. With Origin set to a bare repository,
// pull requests read their head and base commits from it. Lists of check
// runs and statuses come in pages linked as GitHub links them. GitHTTP
// serves bare repositories over git's smart HTTP behind a token, as
// GitHub's git remote does.
package githubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is a fake GitHub. Its exported methods set up and inspect its
// state; every method is safe for concurrent use.
type Server struct {
	// URL is the server's root, for Options.BaseURL of a client.
	URL string
	srv *httptest.Server

	mu sync.Mutex
	// token, when set, is the only token the API accepts.
	token string
	// origin is a bare repository the pulls' heads are read from.
	origin string
	// pageSize, when set, caps the page size of the paged lists.
	pageSize int
	nextID   int64

	pulls       []*Pull
	reviews     map[int][]*Review
	comments    map[int][]*ReviewComment
	checkRuns   []*CheckRun
	statuses    []*Status
	annotations map[int64][]Annotation
	jobs        map[int64]Job
	logs        map[int64]string
	permissions map[string]string
	conflicts   map[int]bool
	rules       map[string][]string
	queue       []*Pull // GitHub's merge queue, in order
	issues      []*Issue
	requests    []Request
	hook        func(w http.ResponseWriter, r *http.Request) bool
	faults      []*fault
}

// fault is a status the next n API requests whose path holds part get.
type fault struct {
	part      string
	n, status int
}

// Request is one request the server saw, for tests that check what was
// sent (headers included, so a test can look for a leaked token).
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   string
}

// Options configure New.
type Options struct {
	// Token is the only token accepted; empty accepts any request.
	Token string
	// Origin is the path of a bare repository; pulls read head.sha and
	// base.sha from its branches.
	Origin string
	// PageSize, when set, caps the page size of the lists of check runs
	// and statuses below the client's per_page, so that a test sees its
	// client follow the pages.
	PageSize int
}

// New starts a server; it stops when the test ends.
func New(t interface{ Cleanup(func()) }, opts Options) *Server {
	s := &Server{
		token:       opts.Token,
		origin:      opts.Origin,
		pageSize:    opts.PageSize,
		nextID:      1000,
		reviews:     map[int][]*Review{},
		comments:    map[int][]*ReviewComment{},
		annotations: map[int64][]Annotation{},
		jobs:        map[int64]Job{},
		logs:        map[int64]string{},
		permissions: map[string]string{},
		conflicts:   map[int]bool{},
	}
	s.srv = httptest.NewServer(s.handler())
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// SetHook calls fn with each API request before it is served, outside
// the server's lock: a test can hold a request there (to kill the client
// while GitHub is creating a pull request), or answer it itself and
// return true (a server error, a rate limit).
func (s *Server) SetHook(fn func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = fn
}

// Fail answers the next n API requests whose path holds part with
// status, as GitHub does on a bad day.
func (s *Server) Fail(part string, n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{part: part, n: n, status: status})
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// User is a GitHub account as the API shows it.
type User struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

// Branch is the head or base of a pull request.
type Branch struct {
	Label string `json:"label"`
	Ref   string `json:"ref"`
	SHA   string `json:"sha"`
}

// Pull is a pull request.
type Pull struct {
	ID             int64      `json:"id"`
	NodeID         string     `json:"node_id"`
	Number         int        `json:"number"`
	State          string     `json:"state"` // open or closed
	Title          string     `json:"title"`
	Body           string     `json:"body"`
	Draft          bool       `json:"draft"`
	URL            string     `json:"url"`
	HTMLURL        string     `json:"html_url"`
	Head           Branch     `json:"head"`
	Base           Branch     `json:"base"`
	User           User       `json:"user"`
	Merged         bool       `json:"merged"`
	Mergeable      *bool      `json:"mergeable"`
	MergeCommitSHA string     `json:"merge_commit_sha,omitempty"`
	MergedAt       *time.Time `json:"merged_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`

	owner, repo string
}

// Review is a pull request review.
type Review struct {
	ID          int64     `json:"id"`
	NodeID      string    `json:"node_id"`
	User        User      `json:"user"`
	Body        string    `json:"body"`
	State       string    `json:"state"` // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
	CommitID    string    `json:"commit_id"`
	HTMLURL     string    `json:"html_url"`
	PullURL     string    `json:"pull_request_url"`
	SubmittedAt time.Time `json:"submitted_at"`
}

// ReviewComment is a comment on a line of a pull request's diff.
type ReviewComment struct {
	ID       int64     `json:"id"`
	ReviewID int64     `json:"pull_request_review_id"`
	Path     string    `json:"path"`
	Line     int       `json:"line,omitempty"`
	Side     string    `json:"side"`
	Body     string    `json:"body"`
	User     User      `json:"user"`
	CommitID string    `json:"commit_id"`
	HTMLURL  string    `json:"html_url"`
	Created  time.Time `json:"created_at"`
}

// CheckOutput is a check run's output.
type CheckOutput struct {
	Title            string `json:"title"`
	Summary          string `json:"summary"`
	Text             string `json:"text,omitempty"`
	AnnotationsCount int    `json:"annotations_count"`
	AnnotationsURL   string `json:"annotations_url"`
}

// CheckRun is one check run of a commit.
type CheckRun struct {
	ID         int64       `json:"id"`
	HeadSHA    string      `json:"head_sha"`
	Name       string      `json:"name"`
	Status     string      `json:"status"`               // queued, in_progress, completed
	Conclusion string      `json:"conclusion,omitempty"` // success, failure, ...
	DetailsURL string      `json:"details_url"`
	HTMLURL    string      `json:"html_url"`
	Output     CheckOutput `json:"output"`
	App        struct {
		Slug string `json:"slug"`
	} `json:"app"`

	owner, repo string
}

// Status is a commit status, as a CI service other than GitHub Actions
// sets it.
type Status struct {
	ID        int64     `json:"id"`
	Context   string    `json:"context"`
	State     string    `json:"state"` // error, failure, pending, success
	TargetURL string    `json:"target_url"`
	CreatedAt time.Time `json:"created_at"`

	owner, repo, sha string
}

// Annotation is a check run annotation.
type Annotation struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Level     string `json:"annotation_level"` // notice, warning, failure
	Title     string `json:"title,omitempty"`
	Message   string `json:"message"`
}

// Job is a GitHub Actions job; a check run made by Actions has the id of
// its job.
type Job struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion"`
	HeadSHA    string `json:"head_sha"`
	Steps      []Step `json:"steps"`
}

// Step is a step of a Job.
type Step struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion"`
	Number     int    `json:"number"`
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

// Pulls returns a copy of every pull request, in the order created.
func (s *Server) Pulls() []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Pull, len(s.pulls))
	for i, p := range s.pulls {
		s.refreshLocked(p)
		out[i] = *p
	}
	return out
}

// Requests returns every request seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// AddReview submits a review on pull request number by user, with line
// comments, and returns its id. state is APPROVED, CHANGES_REQUESTED or
// COMMENTED.
func (s *Server) AddReview(owner, repo string, number int, user, state, body string, comments ...ReviewComment) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pullLocked(owner, repo, number)
	if p == nil {
		panic(fmt.Sprintf("githubtest: no pull request %s/%s#%d", owner, repo, number))
	}
	s.refreshLocked(p)
	r := &Review{ID: s.id(), User: User{Login: user, ID: int64(len(user)), Type: "User"}, Body: body, State: state,
		CommitID: p.Head.SHA, PullURL: p.URL, SubmittedAt: time.Now().UTC().Truncate(time.Second)}
	r.NodeID = "PRR_" + strconv.FormatInt(r.ID, 10)
	r.HTMLURL = fmt.Sprintf("%s#pullrequestreview-%d", p.HTMLURL, r.ID)
	s.reviews[p.Number] = append(s.reviews[p.Number], r)
	for _, c := range comments {
		c.ID, c.ReviewID, c.User, c.CommitID = s.id(), r.ID, r.User, p.Head.SHA
		if c.Side == "" {
			c.Side = "RIGHT"
		}
		c.HTMLURL = fmt.Sprintf("%s#discussion_r%d", p.HTMLURL, c.ID)
		c.Created = r.SubmittedAt
		s.comments[p.Number] = append(s.comments[p.Number], &c)
	}
	return r.ID
}

// SetPermission gives user a permission on every repository: admin,
// maintain, write, triage, read or none.
func (s *Server) SetPermission(user, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.permissions[user] = permission
}

// SetConflict makes pull request number unmergeable (true) or mergeable.
func (s *Server) SetConflict(number int, conflict bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conflicts[number] = conflict
}

// AddCheckRun adds a completed (or pending, with an empty conclusion)
// check run on sha, with annotations and, for an Actions job, its steps
// and log. It returns the run's id, which is also its job's.
func (s *Server) AddCheckRun(owner, repo, sha, name, conclusion string, out CheckOutput, ann []Annotation, steps []Step, log string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr := &CheckRun{ID: s.id(), HeadSHA: sha, Name: name, Status: "completed", Conclusion: conclusion, Output: out, owner: owner, repo: repo}
	if conclusion == "" {
		cr.Status = "in_progress"
	}
	cr.App.Slug = "github-actions"
	cr.HTMLURL = fmt.Sprintf("https://github.com/%s/%s/runs/%d", owner, repo, cr.ID)
	cr.DetailsURL = cr.HTMLURL
	cr.Output.AnnotationsCount = len(ann)
	cr.Output.AnnotationsURL = fmt.Sprintf("%s/api/v3/repos/%s/%s/check-runs/%d/annotations", s.URL, owner, repo, cr.ID)
	s.checkRuns = append(s.checkRuns, cr)
	s.annotations[cr.ID] = ann
	s.jobs[cr.ID] = Job{ID: cr.ID, Name: name, Status: cr.Status, Conclusion: conclusion, HeadSHA: sha, Steps: steps}
	if log != "" {
		s.logs[cr.ID] = log
	}
	return cr.ID
}

// AddStatus sets the commit status of context on sha to state: error,
// failure, pending or success. The combined status lists the latest of
// each context.
func (s *Server) AddStatus(owner, repo, sha, context, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, &Status{ID: s.id(), Context: context, State: state, CreatedAt: time.Now().UTC().Truncate(time.Second),
		owner: owner, repo: repo, sha: sha})
}

func (s *Server) pullLocked(owner, repo string, number int) *Pull {
	for _, p := range s.pulls {
		if p.Number == number && p.owner == owner && p.repo == repo {
			return p
		}
	}
	return nil
}

// refreshLocked reads the head and base commits of an open pull request
// from the origin repository.
func (s *Server) refreshLocked(p *Pull) {
	if s.origin == "" || p.Merged {
		return
	}
	if sha := s.revParse("refs/heads/" + p.Head.Ref); sha != "" {
		p.Head.SHA = sha
	}
	if sha := s.revParse("refs/heads/" + p.Base.Ref); sha != "" {
		p.Base.SHA = sha
	}
}

func (s *Server) revParse(ref string) string {
	if s.origin == "" {
		return ""
	}
	out, err := exec.Command("git", "--git-dir", s.origin, "rev-parse", "--verify", "-q", ref+"^{commit}").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// writeJSON answers v with an ETag, or 304 when the request already has it.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if r.Method == http.MethodGet && status == http.StatusOK {
		sum := sha256.Sum256(b)
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		w.Header().Set("ETag", etag)
		weak := func(t string) string { return strings.TrimPrefix(strings.TrimSpace(t), "W/") }
		if match := r.Header.Get("If-None-Match"); match != "" && weak(match) == weak(etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	writeJSON(w, r, status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

func fakeSHA(parts ...string) string {
	sum := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}
