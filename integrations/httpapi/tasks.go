package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// StartRequest is the body of POST /v1/tasks.
type StartRequest struct {
	// TaskID is optional; without it the next free id of the year is used.
	TaskID string `json:"task_id,omitempty"`
	// Plan is a task_dispatch payload, validated as AMP/1.0.
	Plan json.RawMessage `json:"plan"`
	// Handling may ask for stricter plan approval than the risk level's.
	Handling task.Handling `json:"handling,omitempty"`
	// Coordinator names the coordinator; it defaults to the token's name.
	Coordinator string `json:"coordinator,omitempty"`
	// ExternalID names the tracker's item the task is for: the first
	// start of an item starts its task, and every later start answers
	// with that task. Source names the tracker ("api" when absent) and
	// ExternalURL links back to the item.
	ExternalID  string `json:"external_id,omitempty"`
	Source      string `json:"source,omitempty"`
	ExternalURL string `json:"external_url,omitempty"`
	// CreateBranch makes the plan's branch, at the default branch's
	// head, when the repository lacks it, instead of refusing the task.
	CreateBranch bool `json:"create_branch,omitempty"`
	// Priority orders the task's agent runs in a runner host's queue for
	// its slots: the higher first, -100 to 100; 0 by default.
	Priority int `json:"priority,omitempty"`
}

// DefaultSource is the source of a start that names an external_id and
// no source.
const DefaultSource = "api"

// StartResponse is the answer to POST /v1/tasks.
type StartResponse struct {
	TaskID string `json:"task_id"`
	// Existing is true when the start's external_id had started the task
	// before: nothing new was started.
	Existing bool `json:"existing,omitempty"`
}

// ListResponse is the answer to GET /v1/tasks.
type ListResponse struct {
	Tasks []workflows.TaskSummary `json:"tasks"`
	// NextCursor asks for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// HistoryResponse is the answer to GET /v1/tasks/{id}/history: the
// task's SSOT records in chain order, and the chain's head.
type HistoryResponse struct {
	TaskID  string        `json:"task_id"`
	Records []ssot.Record `json:"records"`
	// Head is the last link of the task's hash chain when the page was
	// read: `ampflow audit verify` checks the chain up to it.
	Head ssot.Head `json:"head"`
	// NextCursor asks for the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// CancelRequest is the body of POST /v1/tasks/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason"`
}

// ReplanRequest is the body of POST /v1/tasks/{id}/replan.
type ReplanRequest struct {
	Subtasks []amp.Subtask `json:"subtasks"`
	Note     string        `json:"note,omitempty"`
}

func (s *Server) startTask(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req StartRequest
	if err := decodeStrict(body, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := s.startInput(req, callerOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in.RequestKey = workflows.RequestKey(callerOf(r).name, key)
	existing := false
	switch {
	case in.Origin != nil:
		origins, ok := s.store.(workflows.Origins)
		if !ok {
			s.writeError(w, r, noStore())
			return
		}
		var started bool
		in.TaskID, started, err = workflows.StartOnce(r.Context(), s.tasks, origins, in, s.now().Year())
		existing = !started
	case in.TaskID != "":
		err = s.tasks.Start(r.Context(), in)
	default:
		in.TaskID, err = s.tasks.StartNext(r.Context(), in, s.now().Year())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if existing {
		s.log.Info("task start answered with the task of its external_id", "task_id", in.TaskID, "by", callerOf(r).name)
	} else {
		s.log.Info("task started over HTTP", "task_id", in.TaskID, "by", callerOf(r).name)
	}
	w.Header().Set("Location", "/v1/tasks/"+in.TaskID)
	writeJSON(w, http.StatusCreated, StartResponse{TaskID: in.TaskID, Existing: existing})
}

// idempotencyKey reads the Idempotency-Key header, checked.
func idempotencyKey(r *http.Request) (string, error) {
	key := r.Header.Get("Idempotency-Key")
	if problem := workflows.CheckIdempotencyKey(key); problem != "" {
		return "", InvalidField("Idempotency-Key", problem)
	}
	return key, nil
}

// startInput checks a start request. The plan is validated inside a
// task_dispatch envelope by amp itself, from the raw bytes, so unknown
// and duplicate keys in it are refused too; payload paths become plan
// paths.
func (s *Server) startInput(req StartRequest, c caller) (task.Input, error) {
	var fields []amp.FieldError
	if req.TaskID != "" && !task.ValidID(req.TaskID) {
		fields = append(fields, amp.FieldError{Path: "task_id", Problem: "must be T-YYYY-NNN"})
	}
	switch req.Handling {
	case "", task.HandlingAuto, task.HandlingAdmin:
	default:
		fields = append(fields, amp.FieldError{Path: "handling", Problem: `must be "auto" or "admin"`})
	}
	if req.Priority < task.MinPriority || req.Priority > task.MaxPriority {
		fields = append(fields, amp.FieldError{Path: "priority", Problem: fmt.Sprintf("must be %d to %d, not %d", task.MinPriority, task.MaxPriority, req.Priority)})
	}
	var origin *task.Origin
	if req.ExternalID != "" || req.Source != "" || req.ExternalURL != "" {
		origin = &task.Origin{Source: req.Source, ExternalID: req.ExternalID, URL: req.ExternalURL}
		if origin.Source == "" {
			origin.Source = DefaultSource
		}
		problems := origin.Problems()
		for _, f := range [][2]string{{"source", "source"}, {"external_id", "external_id"}, {"url", "external_url"}} {
			if p, ok := problems[f[0]]; ok {
				fields = append(fields, amp.FieldError{Path: f[1], Problem: p})
			}
		}
	}
	var plan *amp.TaskDispatch
	if len(req.Plan) == 0 || string(req.Plan) == "null" {
		fields = append(fields, amp.FieldError{Path: "plan", Problem: "is required"})
	} else {
		var perr []amp.FieldError
		plan, perr = ValidatePlan(req.TaskID, req.Plan, s.now())
		fields = append(fields, perr...)
	}
	if len(fields) > 0 {
		return task.Input{}, invalidFields(fields)
	}
	coord := req.Coordinator
	if coord == "" {
		coord = c.name
	}
	return task.Input{TaskID: req.TaskID, Plan: *plan, Handling: req.Handling, Coordinator: coord, Origin: origin, CreateBranch: req.CreateBranch,
		Priority: req.Priority}, nil
}

// ValidatePlan checks a plan as a start of task taskID (any, when it is
// not a task id) at now would: strictly against AMP/1.0, its failing
// fields named plan.…. Every channel that starts tasks checks with it.
func ValidatePlan(taskID string, plan json.RawMessage, now time.Time) (*amp.TaskDispatch, []amp.FieldError) {
	if !task.ValidID(taskID) {
		taskID = fmt.Sprintf("T-%04d-000", now.Year())
	}
	env := struct {
		amp.Message
		Payload json.RawMessage `json:"payload"`
	}{Message: amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, taskID, now, &amp.TaskDispatch{}), Payload: plan}
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, []amp.FieldError{{Path: "plan", Problem: "cannot be encoded: " + err.Error()}}
	}
	m, err := amp.Parse(raw)
	if err == nil {
		return m.Dispatch(), nil
	}
	var ve *amp.ValidationError
	if !errors.As(err, &ve) {
		return nil, []amp.FieldError{{Path: "plan", Problem: err.Error()}}
	}
	var out []amp.FieldError
	for _, f := range ve.Fields {
		path := f.Path
		if rest, ok := strings.CutPrefix(path, "payload"); ok {
			path = "plan" + rest
		}
		out = append(out, amp.FieldError{Path: path, Problem: f.Problem})
	}
	return nil, out
}

// invalidFields is a CodeInvalid error listing fields.
func invalidFields(fields []amp.FieldError) *task.Error {
	lines := make([]string, len(fields))
	for i, f := range fields {
		lines[i] = f.Path + ": " + f.Problem
	}
	return &task.Error{Code: task.CodeInvalid, Message: strings.Join(lines, "; "), Fields: fields}
}

// listTasks lists tasks newest first from the store's index, filtered by
// status, risk and repo: one query, whatever the number of tasks. A task
// ended outside ampflow (a workflow terminated by hand in Temporal) keeps
// the last status its workflow recorded.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := task.Status(q.Get("status"))
	if status != "" && !status.Valid() {
		s.writeError(w, r, InvalidField("status", fmt.Sprintf("unknown status %q", status)))
		return
	}
	risk := amp.Risk(q.Get("risk"))
	switch risk {
	case "", amp.RiskLow, amp.RiskMedium, amp.RiskHigh:
	default:
		s.writeError(w, r, InvalidField("risk", fmt.Sprintf("unknown risk %q: low, medium or high", risk)))
		return
	}
	p, err := readPage(q, listTasks)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.store == nil {
		s.writeError(w, r, noStore())
		return
	}
	rows, next, err := s.store.TaskList(r.Context(), ssot.TaskFilter{Status: string(status), Risk: string(risk), Repo: q.Get("repo"), Source: q.Get("source")}, p.storePage())
	if err != nil {
		s.writeError(w, r, storeError(err, "tasks"))
		return
	}
	tasks := make([]workflows.TaskSummary, len(rows))
	for i, t := range rows {
		st := task.Status(t.Status)
		tasks[i] = workflows.TaskSummary{TaskID: t.TaskID, Status: st, Risk: t.Risk, Repo: t.Repo,
			RejectCount: int64(t.RejectCount), StartedAt: t.StartedAt, Running: !st.Terminal()}
		if o := t.Origin; o != nil {
			tasks[i].Origin = &task.Origin{Source: o.Source, ExternalID: o.ExternalID, URL: o.URL}
		}
	}
	writeJSON(w, http.StatusOK, ListResponse{Tasks: tasks, NextCursor: p.storeNext(next)})
}

// taskID returns the {id} path value, checked.
func taskID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !task.ValidID(id) {
		return "", InvalidField("id", fmt.Sprintf("%q is not T-YYYY-NNN", id))
	}
	return id, nil
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
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
	writeJSON(w, http.StatusOK, st)
}

// taskStates reads one task's state row (*ssot.DB does).
type taskStates interface {
	Task(ctx context.Context, taskID string) (ssot.TaskState, error)
}

// storedState answers GET /v1/tasks/{id} from the store when the task's
// workflow gave no answer in time (a worker busy with a burst of starts):
// the store has the task from the moment its start answered.
func (s *Server) storedState(r *http.Request, id string, err error) (task.State, bool) {
	rows, ok := s.store.(taskStates)
	if !ok || asTaskError(err).Code != task.CodeUnavailable {
		return task.State{}, false
	}
	row, rerr := rows.Task(r.Context(), id)
	if rerr != nil {
		return task.State{}, false
	}
	var st task.State
	if json.Unmarshal(row.State, &st) != nil || st.TaskID != id {
		return task.State{}, false
	}
	s.log.Warn("task read from the SSOT: its workflow did not answer", "task_id", id, "error", err)
	return st, true
}

func (s *Server) taskHistory(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := readPage(r.URL.Query(), listHistory)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.store == nil {
		s.writeError(w, r, noStore())
		return
	}
	recs, next, err := s.store.History(r.Context(), id, p.storePage())
	if err != nil {
		s.writeError(w, r, storeError(err, "task "+id))
		return
	}
	// Read after the page, the head is at or past its last record.
	head, err := s.store.Head(r.Context(), id)
	if err != nil {
		s.writeError(w, r, storeError(err, "task "+id))
		return
	}
	if recs == nil {
		recs = []ssot.Record{}
	}
	writeJSON(w, http.StatusOK, HistoryResponse{TaskID: id, Records: recs, Head: head, NextCursor: p.storeNext(next)})
}

func (s *Server) getRecord(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.store == nil {
		s.writeError(w, r, noStore())
		return
	}
	rec, err := s.store.Get(r.Context(), id)
	if err != nil {
		s.writeError(w, r, storeError(err, "record "+id))
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// taskDiff serves the diff of a result that GitHub cannot show, as the
// git checks kept it: a review_request's diff_url names it.
func (s *Server) taskDiff(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	msgID := r.PathValue("msg_id")
	s.serveTaskFile(w, r, id, ssot.DiffName(msgID), "diff of "+msgID)
}

// serveTaskFile serves, as plain text, the file name kept beside task
// id's records; what names it in an error.
func (s *Server) serveTaskFile(w http.ResponseWriter, r *http.Request, id, name, what string) {
	if s.store == nil {
		s.writeError(w, r, noStore())
		return
	}
	b, err := s.store.File(r.Context(), id, name)
	if err != nil {
		s.writeError(w, r, storeError(err, what+" in task "+id))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

func noStore() *task.Error {
	return task.Errorf(task.CodeUnavailable, "no SSOT store is configured")
}

// storeError classifies an SSOT read error.
func storeError(err error, what string) *task.Error {
	var ie *ssot.InvalidError
	switch {
	case errors.Is(err, ssot.ErrNotFound):
		return &task.Error{Code: task.CodeNotFound, Message: fmt.Sprintf("no %s in the SSOT", what), Err: err}
	case errors.As(err, &ie):
		return InvalidField(ie.Field, ie.Problem)
	}
	return &task.Error{Code: task.CodeInternal, Message: fmt.Sprintf("reading %s from the SSOT failed", what), Err: err}
}

func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req CancelRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.TrimSpace(req.Reason) == "" {
		s.writeError(w, r, InvalidField("reason", "is required"))
		return
	}
	res, err := s.tasks.Cancel(r.Context(), id, task.CancelInput{Reason: req.Reason, By: callerOf(r).name})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("task cancelled over HTTP", "task_id", id, "by", callerOf(r).name)
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) replanTask(w http.ResponseWriter, r *http.Request) {
	id, err := taskID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := s.replanRequest(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.tasks.Replan(r.Context(), id, task.ReplanInput{Subtasks: req.Subtasks, Note: req.Note, By: callerOf(r).name})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.Info("task replanned over HTTP", "task_id", id, "by", callerOf(r).name, "subtasks", len(req.Subtasks))
	writeJSON(w, http.StatusOK, res)
}

// replanRequest decodes a ReplanRequest one subtask at a time, so that an
// unknown field is named with its index (subtasks[1].size).
func (s *Server) replanRequest(w http.ResponseWriter, r *http.Request) (ReplanRequest, error) {
	var raw struct {
		Subtasks []json.RawMessage `json:"subtasks"`
		Note     string            `json:"note,omitempty"`
	}
	if err := s.decodeBody(w, r, &raw); err != nil {
		return ReplanRequest{}, err
	}
	if len(raw.Subtasks) == 0 {
		return ReplanRequest{}, InvalidField("subtasks", "must list at least one subtask")
	}
	req := ReplanRequest{Subtasks: make([]amp.Subtask, len(raw.Subtasks)), Note: raw.Note}
	var fields []amp.FieldError
	for i, b := range raw.Subtasks {
		err := decodeStrict(b, &req.Subtasks[i])
		if err == nil {
			continue
		}
		for _, f := range asTaskError(err).Fields {
			path := fmt.Sprintf("subtasks[%d]", i)
			if f.Path != amp.RootPath {
				path += "." + f.Path
			}
			fields = append(fields, amp.FieldError{Path: path, Problem: f.Problem})
		}
	}
	if len(fields) > 0 {
		return ReplanRequest{}, invalidFields(fields)
	}
	return req, nil
}

// decodeBody reads and strictly decodes the request body into v.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}
