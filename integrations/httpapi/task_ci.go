package httpapi

import (
	"fmt"
	"net/http"
	"regexp"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// TaskCIResponse is the answer to GET /v1/tasks/{id}/ci: whether the
// task has CI, and each round of it.
type TaskCIResponse struct {
	TaskID string `json:"task_id"`
	// CI is on, or off when the task's policy has no CI (ci.provider
	// none): then no round is ever read, and nothing passed.
	CI string `json:"ci"`
	// State is the last reading's state (task.State.CI): off, pending,
	// passed, failed, timed_out, none; empty before the first reading.
	State  string         `json:"state"`
	Rounds []ssot.CIRound `json:"rounds"`
}

// CI of TaskCIResponse.
const (
	CIOn  = "on"
	CIOff = task.CIOff
)

func (s *Server) taskCI(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.store == nil {
		s.writeError(w, r, noStore())
		return
	}
	st, err := s.tasks.State(r.Context(), id)
	if err != nil {
		if stored, ok := s.storedState(r, id, err); ok {
			st, err = stored, nil
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rounds, err := ssot.CIRounds(r.Context(), s.store, id)
	if err != nil {
		s.writeError(w, r, storeError(err, "CI rounds of task "+id))
		return
	}
	out := TaskCIResponse{TaskID: id, CI: CIOn, State: st.CI, Rounds: rounds}
	if st.CI == task.CIOff {
		out.CI = CIOff
	}
	writeJSON(w, http.StatusOK, out)
}

// fullCommit is a whole commit hash (SHA-1 or SHA-256).
var fullCommit = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// taskCILog serves the whole log of a command CI run, kept beside the
// task's records (a round's log_kept).
func (s *Server) taskCILog(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	commit := r.PathValue("commit")
	if !fullCommit.MatchString(commit) {
		s.writeError(w, r, InvalidField("commit", fmt.Sprintf("must be a whole commit hash (40 or 64 hex digits), not %q", commit)))
		return
	}
	s.serveTaskFile(w, r, id, ssot.CILogName(commit), "CI log of "+commit)
}
