package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// TaskMessages is where the API keeps what people send a task's running
// agent, for the worker's runs to read (*ssot.DB).
type TaskMessages interface {
	AddTaskMessage(ctx context.Context, m ssot.TaskMessage) (ssot.TaskMessage, error)
	TaskMessages(ctx context.Context, taskID string) ([]ssot.TaskMessage, error)
}

var _ TaskMessages = (*ssot.DB)(nil)

// Steerer tells a task of a message for its agent (workflows.Client).
// Without one the message is kept for the running agent, but an
// interrupted run does not resume on it.
type Steerer interface {
	Steer(ctx context.Context, taskID string, in task.SteerInput) error
}

// SayRequest is the body of POST /v1/tasks/{id}/messages.
type SayRequest struct {
	Text string `json:"text"`
}

// InterruptRequest is the body of POST /v1/tasks/{id}/interrupt; it may
// be empty.
type InterruptRequest struct {
	// Reason is kept with the interrupt (its text); optional.
	Reason string `json:"reason,omitempty"`
}

// TaskMessagesResponse is a task's messages and interrupts, oldest
// first.
type TaskMessagesResponse struct {
	TaskID   string             `json:"task_id"`
	Messages []ssot.TaskMessage `json:"messages"`
}

// interruptible are the statuses in which an agent's run may be going.
var interruptible = []task.Status{task.StatusDispatched, task.StatusInProgress, task.StatusInReview}

func (s *Server) steerRoutes(coordinators, admins []amp.Role) {
	s.handle("POST /v1/tasks/{id}/messages", coordinators, s.sayToTask)
	s.handle("GET /v1/tasks/{id}/messages", nil, s.taskMessages)
	s.handle("POST /v1/tasks/{id}/interrupt", admins, s.interruptTask)
}

// steerable reads the task a caller would steer: it must be running, and
// the caller an admin or the task's coordinator.
func (s *Server) steerable(r *http.Request, id string) (task.State, error) {
	if s.messages == nil {
		return task.State{}, noStore()
	}
	st, err := s.tasks.State(r.Context(), id)
	if err != nil {
		return st, err
	}
	if st.Status.Terminal() {
		return st, task.Errorf(task.CodeFinished, "task %s is %s: its agent takes no messages", id, st.Status)
	}
	c := callerOf(r)
	if !c.open && c.role != amp.RoleAdmin && c.name != st.Coordinator {
		return st, task.Errorf(task.CodeForbidden, "task %s was started by %q: only they or an admin may steer its agent, not %q", id, st.Coordinator, c.name)
	}
	return st, nil
}

func (s *Server) sayToTask(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req SayRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case strings.TrimSpace(req.Text) == "":
		s.writeError(w, r, InvalidField("text", "is required"))
		return
	case len(req.Text) > ssot.MaxTaskMessageText:
		s.writeError(w, r, InvalidField("text", "is longer than 8192 bytes"))
		return
	}
	if _, err := s.steerable(r, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	by := callerOf(r).name
	m, err := s.messages.AddTaskMessage(r.Context(), ssot.TaskMessage{TaskID: id, Kind: ssot.TaskMessageSay, Sender: by, Text: req.Text, CreatedAt: s.now()})
	if err != nil {
		s.writeError(w, r, storeError(err, "the message"))
		return
	}
	if s.steerer != nil {
		if err := s.steerer.Steer(r.Context(), id, task.SteerInput{ID: m.ID, By: by}); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.log.Info("message for a task's agent over HTTP", "task_id", id, "by", by, "id", m.ID)
	writeJSON(w, http.StatusCreated, m)
}

func (s *Server) interruptTask(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req InterruptRequest
	if r.ContentLength != 0 {
		if err := s.decodeBody(w, r, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if len(req.Reason) > ssot.MaxTaskMessageText {
		s.writeError(w, r, InvalidField("reason", "is longer than 8192 bytes"))
		return
	}
	st, err := s.steerable(r, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case st.Interrupted != nil:
		s.writeError(w, r, task.Errorf(task.CodeUnexpected, "task %s: the %s's run is interrupted already (by %s); ampflow task say resumes it", id, st.Interrupted.Role, st.Interrupted.By))
		return
	case !statusIn(st.Status, interruptible):
		s.writeError(w, r, task.Errorf(task.CodeUnexpected, "task %s is %s: no agent's run to interrupt (only while dispatched, in_progress or in_review)", id, st.Status))
		return
	}
	by := callerOf(r).name
	m, err := s.messages.AddTaskMessage(r.Context(), ssot.TaskMessage{TaskID: id, Kind: ssot.TaskMessageInterrupt, Sender: by, Text: strings.TrimSpace(req.Reason), CreatedAt: s.now()})
	if err != nil {
		s.writeError(w, r, storeError(err, "the task's messages"))
		return
	}
	s.log.Info("task's agent interrupted over HTTP", "task_id", id, "by", by, "id", m.ID)
	writeJSON(w, http.StatusAccepted, m)
}

func (s *Server) taskMessages(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.messages == nil {
		s.writeError(w, r, noStore())
		return
	}
	ms, err := s.messages.TaskMessages(r.Context(), id)
	if err != nil {
		s.writeError(w, r, storeError(err, "the task's messages"))
		return
	}
	if ms == nil {
		ms = []ssot.TaskMessage{}
	}
	writeJSON(w, http.StatusOK, TaskMessagesResponse{TaskID: id, Messages: ms})
}

func statusIn(s task.Status, list []task.Status) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// MarshalJSON writes messages as [] when there are none.
func (r TaskMessagesResponse) MarshalJSON() ([]byte, error) {
	type plain TaskMessagesResponse
	if r.Messages == nil {
		r.Messages = []ssot.TaskMessage{}
	}
	return json.Marshal(plain(r))
}
