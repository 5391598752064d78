package dashboard

import (
	"errors"
	"net/http"
	"regexp"

	"github.com/ampflow/ampflow/activities/ssot"
)

// fullCommit is a whole commit hash (SHA-1 or SHA-256).
var fullCommit = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

type ciLogData struct {
	TaskID, Commit, Log string
}

// ciLogPage shows the whole log of a command CI run of a task, as kept
// beside its records.
func (s *Server) ciLogPage(w http.ResponseWriter, r *http.Request, v viewer) {
	id, commit := r.PathValue("id"), r.PathValue("commit")
	if !fullCommit.MatchString(commit) {
		s.errorPage(w, r, v, http.StatusNotFound, "No CI log is kept for "+commit+" of "+id+".")
		return
	}
	b, err := s.store.File(r.Context(), id, ssot.CILogName(commit))
	if errors.Is(err, ssot.ErrNotFound) {
		s.errorPage(w, r, v, http.StatusNotFound, "No CI log is kept for "+commit+" of "+id+".")
		return
	}
	if err != nil {
		s.errorPage(w, r, v, http.StatusServiceUnavailable, err.Error())
		return
	}
	d := s.base(w, r, v, "CI log of "+commit[:12], "tasks")
	d.Task = id
	d.Data = ciLogData{TaskID: id, Commit: commit, Log: string(b)}
	s.render(w, r, http.StatusOK, "cilog", d)
}
