package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// startData is the start page's form, filled again with what was posted
// and its problems when a start is refused.
type startData struct {
	Text, Repo, Criteria, Risk, Branch string
	// Errors are the problems by the form's field name; "form" is one of
	// no field.
	Errors map[string]string
}

// startPage shows the form that starts a task from one line, as
// `ampflow task start "TEXT" --repo …` does.
func (s *Server) startPage(w http.ResponseWriter, r *http.Request, v viewer) {
	if !v.Admin() {
		s.errorPage(w, r, v, http.StatusForbidden, v.Name+" is "+string(v.Role)+": only admins start tasks.")
		return
	}
	s.renderStart(w, r, v, http.StatusOK, startData{Risk: string(amp.RiskLow)})
}

func (s *Server) renderStart(w http.ResponseWriter, r *http.Request, v viewer, status int, f startData) {
	d := s.base(w, r, v, "Start a task", "tasks")
	d.Data = f
	s.render(w, r, status, "start", d)
}

// start starts a task from the form: the plan the one-line start makes,
// checked as every plan is, its branch made when missing. A refusal shows
// the form again, each problem by its field.
func (s *Server) start(w http.ResponseWriter, r *http.Request, v viewer) {
	f := startData{
		Text: strings.TrimSpace(r.PostForm.Get("text")), Repo: strings.TrimSpace(r.PostForm.Get("repo")),
		Criteria: r.PostForm.Get("criteria"), Risk: r.PostForm.Get("risk"), Branch: strings.TrimSpace(r.PostForm.Get("branch")),
	}
	var criteria []string
	for _, c := range strings.Split(f.Criteria, "\n") {
		if c = strings.TrimSpace(c); c != "" {
			criteria = append(criteria, c)
		}
	}
	b := task.Brief{Text: f.Text, Repo: f.Repo, Branch: f.Branch, Criteria: criteria, Risk: amp.Risk(f.Risk)}
	f.Errors = b.Problems()
	var plan *amp.TaskDispatch
	if len(f.Errors) == 0 {
		raw, err := json.Marshal(b.Plan())
		if err != nil {
			s.errorPage(w, r, v, http.StatusInternalServerError, err.Error())
			return
		}
		var fields []amp.FieldError
		plan, fields = httpapi.ValidatePlan("", raw, s.now())
		for _, fe := range fields {
			name := planField(fe.Path)
			if _, seen := f.Errors[name]; !seen {
				f.Errors[name] = fe.Path + " " + fe.Problem
			}
		}
	}
	if len(f.Errors) > 0 {
		s.renderStart(w, r, v, http.StatusUnprocessableEntity, f)
		return
	}
	id, err := s.actions.StartNext(r.Context(), task.Input{Plan: *plan, Coordinator: v.Name, CreateBranch: true}, s.now().Year())
	if err != nil {
		f.Errors = map[string]string{"form": "Not started: " + errorText(err)}
		s.renderStart(w, r, v, http.StatusConflict, f)
		return
	}
	s.log.Info("task started on the dashboard", "task_id", id, "by", v.Name)
	s.flashBack(w, r, "/tasks/"+id, fmt.Sprintf("Started %s.", id))
}

// planField is the form's field a plan's failing field comes from.
func planField(path string) string {
	switch {
	case path == "plan.repo":
		return "repo"
	case path == "plan.branch":
		return "branch"
	case path == "plan.risk_level":
		return "risk"
	case strings.HasPrefix(path, "plan.acceptance_criteria"):
		return "criteria"
	case path == "plan.description" || strings.HasPrefix(path, "plan.subtasks"):
		return "text"
	}
	return "form"
}
