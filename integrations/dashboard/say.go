package dashboard

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// say sends the task's running agent a message, as `ampflow task say`
// does: kept in the store for the run, the task told of it.
func (s *Server) say(w http.ResponseWriter, r *http.Request, v viewer) {
	id := r.PathValue("id")
	back := "/tasks/" + id
	text := strings.TrimSpace(r.PostForm.Get("text"))
	switch {
	case text == "":
		s.flashBack(w, r, back, "Not sent: the message is empty.")
		return
	case len(text) > ssot.MaxTaskMessageText:
		s.flashBack(w, r, back, fmt.Sprintf("Not sent: the message is longer than %d bytes.", ssot.MaxTaskMessageText))
		return
	case s.messages == nil:
		s.flashBack(w, r, back, "Not sent: this dashboard keeps no messages.")
		return
	}
	m, err := s.messages.AddTaskMessage(r.Context(), ssot.TaskMessage{TaskID: id, Kind: ssot.TaskMessageSay, Sender: v.Name, Text: text, CreatedAt: s.now()})
	if err == nil && s.steer != nil {
		err = s.steer.Steer(r.Context(), id, task.SteerInput{ID: m.ID, By: v.Name})
	}
	if err != nil {
		s.flashBack(w, r, back, "Not sent: "+errorText(err))
		return
	}
	s.log.Info("message for a task's agent on the dashboard", "task_id", id, "by", v.Name, "id", m.ID)
	s.flashBack(w, r, back, fmt.Sprintf("Message %d sent to the agent of %s.", m.ID, id))
}
