package githubtest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// The checks, statuses and Actions jobs of commits.

func (s *Server) listCheckRuns(w http.ResponseWriter, r *http.Request) {
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	s.mu.Lock()
	defer s.mu.Unlock()
	sha := s.resolve(r.PathValue("ref"))
	latest := map[string]*CheckRun{}
	var order []string
	for _, cr := range s.checkRuns {
		if cr.owner != owner || cr.repo != repo || cr.HeadSHA != sha {
			continue
		}
		if _, ok := latest[cr.Name]; !ok {
			order = append(order, cr.Name)
		}
		latest[cr.Name] = cr
	}
	runs := []*CheckRun{}
	for _, name := range order {
		runs = append(runs, latest[name])
	}
	lo, hi := s.page(w, r, len(runs))
	writeJSON(w, r, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": runs[lo:hi]})
}

// combinedStatus answers the latest status of each context and their
// combined state: failure if any failed, pending if any is pending or
// there are none, else success.
func (s *Server) combinedStatus(w http.ResponseWriter, r *http.Request) {
	owner, repo := r.PathValue("owner"), r.PathValue("repo")
	s.mu.Lock()
	defer s.mu.Unlock()
	sha := s.resolve(r.PathValue("ref"))
	latest := map[string]*Status{}
	var order []string
	for _, st := range s.statuses {
		if st.owner != owner || st.repo != repo || st.sha != sha {
			continue
		}
		if _, ok := latest[st.Context]; !ok {
			order = append(order, st.Context)
		}
		latest[st.Context] = st
	}
	statuses := []*Status{}
	state := "success"
	for _, c := range order {
		st := latest[c]
		statuses = append(statuses, st)
		switch {
		case st.State == "failure" || st.State == "error":
			state = "failure"
		case st.State == "pending" && state != "failure":
			state = "pending"
		}
	}
	if len(statuses) == 0 {
		state = "pending"
	}
	lo, hi := s.page(w, r, len(statuses))
	writeJSON(w, r, http.StatusOK, map[string]any{"state": state, "sha": sha, "total_count": len(statuses), "statuses": statuses[lo:hi]})
}

func (s *Server) listAnnotations(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	ann, ok := s.annotations[id]
	if !ok {
		writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, r, http.StatusOK, append([]Annotation{}, ann...))
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	job, ok := s.jobs[id]
	if !ok {
		writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, r, http.StatusOK, job)
}

// jobLogs redirects to the log file, as GitHub does (302 to a URL that
// needs no token and expires).
func (s *Server) jobLogs(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	_, ok := s.logs[id]
	s.mu.Unlock()
	if !ok {
		writeError(w, r, http.StatusNotFound, "Not Found")
		return
	}
	http.Redirect(w, r, fmt.Sprintf("%s/_logs/%d?sig=fake", s.URL, id), http.StatusFound)
}

func (s *Server) logFile(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone()})
	log, ok := s.logs[id]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, log)
}
