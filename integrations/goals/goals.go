// Package goals serves goals on ampflow's HTTP API: POST /v1/goals starts
// one from a goal file, GET /v1/goals/{id} shows its graph, each task's
// state and cost, and what waits on whom.
package goals

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Goals starts goals and reads them (*goalwf.Client).
type Goals interface {
	Start(ctx context.Context, g goal.Goal, coordinator string) error
	State(ctx context.Context, id string) (goal.State, error)
}

// Tasks reads a started task's state (*workflows.Client).
type Tasks interface {
	State(ctx context.Context, taskID string) (task.State, error)
}

// Options configure the routes; Goals and Tasks are required.
type Options struct {
	Goals Goals
	Tasks Tasks
	// Planner says a planner is configured (goals.planner.runner): a
	// goal file may then give only a description, whose graph it
	// proposes.
	Planner bool
	Now     func() time.Time
	Logger  *slog.Logger
}

// StartResponse is the answer of POST /v1/goals.
type StartResponse struct {
	GoalID string      `json:"goal_id"`
	Status goal.Status `json:"status"`
}

// TaskView is one task of a goal's view: the goal's view of it, and its
// task's own status and cost once it has started.
type TaskView struct {
	goal.TaskState
	// TaskStatus is the started task's own status (in_review, say).
	TaskStatus task.Status `json:"task_status,omitempty"`
	CostUSD    float64     `json:"cost_usd"`
}

// View is the answer of GET /v1/goals/{id}.
type View struct {
	goal.State
	Tasks []TaskView `json:"tasks"`
	// CostUSD is the sum of the tasks' costs.
	CostUSD float64 `json:"cost_usd"`
}

type api struct {
	srv *httpapi.Server
	o   Options
	log *slog.Logger
}

// Register adds POST /v1/goals and GET /v1/goals/{id} to srv.
func Register(srv *httpapi.Server, o Options) {
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &api{srv: srv, o: o, log: cmp.Or(o.Logger, slog.Default())}
	roles := []amp.Role{amp.RoleCoordinator, amp.RoleAdmin}
	srv.Add(httpapi.Spec{Schemas: schemas, DecisionKinds: decisionKinds},
		httpapi.Route{Pattern: "POST /v1/goals", Roles: roles, Handler: a.post, Operation: opStart},
		httpapi.Route{Pattern: "GET /v1/goals/{id}", Roles: roles, Handler: a.get, Operation: opGet})
}

func (a *api) post(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := a.srv.Decode(w, r, &raw); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	id := goal.NewID()
	g, err := a.parse(raw, id)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if err := a.o.Goals.Start(r.Context(), g, httpapi.CallerOf(r).Name); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	status := goal.StatusAwaitingApproval
	if len(g.Tasks) == 0 {
		status = goal.StatusPlanning
	}
	httpapi.WriteJSON(w, http.StatusCreated, StartResponse{GoalID: id, Status: status})
}

// parse reads a goal file: a graph, or, with a planner, a description
// alone for the planner.
func (a *api) parse(raw []byte, id string) (goal.Goal, error) {
	if !goal.IsDraft(raw) {
		g, err := goal.Parse(raw, id, a.o.Now())
		if err != nil {
			return g, invalid(err)
		}
		return g, nil
	}
	if !a.o.Planner {
		return goal.Goal{}, invalid(&amp.ValidationError{Fields: []amp.FieldError{{Path: "tasks",
			Problem: "is required: this server has no planner to propose them (goals.planner.runner is not set)"}}})
	}
	g, err := goal.ParseDraft(raw, id)
	if err != nil {
		return g, invalid(err)
	}
	return g, nil
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	st, err := a.o.Goals.State(r.Context(), r.PathValue("id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, ViewOf(r.Context(), st, a.o.Tasks, a.log))
}

// ViewOf is st with each started task's own status and cost, read from
// tasks; a task that cannot be read is shown without them.
func ViewOf(ctx context.Context, st goal.State, tasks Tasks, log *slog.Logger) View {
	v := View{State: st, Tasks: make([]TaskView, len(st.Tasks))}
	for i, t := range st.Tasks {
		v.Tasks[i] = TaskView{TaskState: t}
		if t.TaskID == "" || tasks == nil {
			continue
		}
		ts, err := tasks.State(ctx, t.TaskID)
		if err != nil {
			log.Warn("reading a goal's task", "goal", st.Goal.ID, "task", t.TaskID, "error", err)
			continue
		}
		v.Tasks[i].TaskStatus, v.Tasks[i].CostUSD = ts.Status, ts.CostUSD
		v.CostUSD += ts.CostUSD
	}
	return v
}

// invalid is the API's error for a goal file Parse refused: each field
// at fault named.
func invalid(err error) *task.Error {
	e := &task.Error{Code: task.CodeInvalid, Message: "invalid goal: " + err.Error(), Err: err}
	var ve *amp.ValidationError
	if errors.As(err, &ve) {
		e.Fields = ve.Fields
		e.Message = "invalid goal: " + strings.ReplaceAll(ve.Error(), "\n", "; ")
	}
	return e
}
