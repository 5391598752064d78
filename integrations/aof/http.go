package aof

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// Store is what the AOF routes read and log to.
type Store interface {
	AOFTask(ctx context.Context, taskID string) (ssot.AOFTask, error)
	AOFTasks(ctx context.Context, status string, p ssot.Page) ([]ssot.AOFTask, string, error)
	AOFArtifacts(ctx context.Context, taskID string) ([]ssot.AOFArtifact, error)
	AOFEvents(ctx context.Context, taskID string, p ssot.Page) ([]ssot.AOFEvent, string, error)
	SaveAOF(ctx context.Context, in ssot.AOFSave) error
	NextAOFTaskID(ctx context.Context, day string, taken func(id string) (bool, error)) (string, error)
}

// Tasks is what the AOF routes ask of the task workflows.
type Tasks interface {
	Create(ctx context.Context, t wf.Task) (wf.Task, error)
	Message(ctx context.Context, in wf.MessageInput) (wf.Result, error)
	Dispatch(ctx context.Context, taskID string, in wf.DispatchInput) (wf.Result, error)
	Heartbeat(ctx context.Context, taskID string, in wf.HeartbeatInput) (wf.Result, error)
	SessionEnd(ctx context.Context, taskID string, in wf.SessionEndInput) (wf.Result, error)
}

// API serves AOF/1 on ampflow's HTTP API.
type API struct {
	srv   *httpapi.Server
	tasks Tasks
	store Store
	log   *slog.Logger
	now   func() time.Time
}

// Register adds the AOF routes to srv.
func Register(srv *httpapi.Server, tasks Tasks, store Store, log *slog.Logger) *API {
	if log == nil {
		log = slog.Default()
	}
	a := &API{srv: srv, tasks: tasks, store: store, log: log, now: time.Now}
	srv.Add(Spec(), a.Routes()...)
	return a
}

// Codes maps each AOF error code to its HTTP status.
var Codes = map[task.Code]int{
	wf.CodeInvalidJSON:       http.StatusBadRequest,
	wf.CodeInvalidEnvelope:   http.StatusBadRequest,
	wf.CodeTaskIDMismatch:    http.StatusBadRequest,
	wf.CodeUnknownType:       http.StatusBadRequest,
	wf.CodeTaskNotFound:      http.StatusNotFound,
	wf.CodeParentNotFound:    http.StatusNotFound,
	wf.CodeNestedDelegation:  http.StatusConflict,
	wf.CodeInvalidTransition: http.StatusConflict,
	wf.CodeNotRunning:        http.StatusConflict,
}

var (
	writers = []amp.Role{amp.RoleAdmin, amp.RoleCoordinator}
	agents  = []amp.Role{amp.RoleAdmin, amp.RoleCoordinator, amp.RoleExecutor, amp.RoleReviewer}
)

// Routes are the AOF routes.
func (a *API) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Pattern: "POST /v1/aof/messages", Roles: agents, Handler: a.postMessage, Operation: opMessages},
		{Pattern: "POST /v1/aof/tasks", Roles: writers, Handler: a.postTask, Operation: opCreate},
		{Pattern: "GET /v1/aof/tasks/{id}", Handler: a.getTask, Operation: opGetTask},
		{Pattern: "POST /v1/aof/tasks/{id}/dispatch", Roles: writers, Handler: a.postDispatch, Operation: opDispatch},
		{Pattern: "POST /v1/aof/tasks/{id}/heartbeat", Roles: agents, Handler: a.postHeartbeat, Operation: opHeartbeat},
		{Pattern: "GET /v1/aof/events", Handler: a.getEvents, Operation: opEvents},
		{Pattern: "POST /v1/aof/session-end", Roles: agents, Handler: a.postSessionEnd, Operation: opSessionEnd},
	}
}

// logEvents logs events the routes write themselves: the rejections and
// the receipts of valid messages.
func (a *API) logEvents(ctx context.Context, evs ...ssot.AOFEvent) {
	for i := range evs {
		evs[i].ID = newEventID()
		evs[i].At = a.now().UTC()
		if evs[i].Payload == nil {
			evs[i].Payload = json.RawMessage(`{}`)
		}
	}
	if err := a.store.SaveAOF(context.WithoutCancel(ctx), ssot.AOFSave{Events: evs}); err != nil {
		a.log.Error("logging AOF events", "error", err)
	}
}

func event(typ, taskID, actor string, payload map[string]any) ssot.AOFEvent {
	b, _ := json.Marshal(payload)
	return ssot.AOFEvent{Type: typ, TaskID: taskID, Actor: actor, Payload: b}
}

func newEventID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "ev-" + hex.EncodeToString(b)
}

// refuse answers a rejection with its reason as the error code.
func (a *API) refuse(w http.ResponseWriter, r *http.Request, code task.Code, fields []amp.FieldError, format string, args ...any) {
	e := task.Errorf(code, format, args...)
	e.Fields = fields
	a.srv.Error(w, r, e)
}

func (a *API) postMessage(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := a.srv.Decode(w, r, &raw); err != nil {
		var te *task.Error
		if !errors.As(err, &te) || te.Code != task.CodeInvalid {
			a.srv.Error(w, r, err)
			return
		}
		raw = nil
	}
	m, rej := Detect(raw)
	if rej != nil {
		a.logEvents(r.Context(), event(rej.Event, rej.TaskID, rej.Actor, rej.Payload()))
		code := task.Code(rej.Reason)
		if rej.Event == wf.EventUnknown {
			code = wf.CodeUnknownType
		}
		a.refuse(w, r, code, rej.Fields, "%s", rej.Error())
		return
	}
	ctx := r.Context()
	a.logEvents(ctx, event(wf.EventReceived, m.TaskID, m.FromAgent, map[string]any{"type": m.Type, "toAgent": m.ToAgent, "sentAt": wf.Stamp(m.SentAt)}))
	handoff := m.Type == wf.TypeHandoffRequest || m.Type == wf.TypeHandoffAccepted || m.Type == wf.TypeHandoffRejected
	_, err := a.store.AOFTask(ctx, m.TaskID)
	if errors.Is(err, ssot.ErrNotFound) {
		evs := []ssot.AOFEvent{event(wf.EventRejected, m.TaskID, m.FromAgent, map[string]any{"reason": wf.ReasonTaskNotFound, "type": m.Type})}
		if handoff {
			evs = append(evs, event(wf.EventDelegationRejected, m.TaskID, m.FromAgent, map[string]any{"reason": wf.ReasonTaskNotFound}))
		}
		a.logEvents(ctx, evs...)
		a.refuse(w, r, wf.CodeTaskNotFound, nil, "task %s not found", m.TaskID)
		return
	}
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	in := wf.MessageInput{Message: m}
	if m.Type == wf.TypeHandoffRequest {
		parent, err := a.store.AOFTask(ctx, m.Handoff.ParentTaskID)
		if errors.Is(err, ssot.ErrNotFound) {
			a.logEvents(ctx, event(wf.EventDelegationRejected, m.TaskID, m.FromAgent, map[string]any{"reason": wf.ReasonParentNotFound, "parentTaskId": m.Handoff.ParentTaskID}))
			a.refuse(w, r, wf.CodeParentNotFound, []amp.FieldError{{Path: "payload.parentTaskId", Problem: "not found"}},
				"parent task %s not found", m.Handoff.ParentTaskID)
			return
		}
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		in.ParentDepth = depthOf(parent)
	}
	res, err := a.tasks.Message(ctx, in)
	if err != nil {
		var te *task.Error
		if errors.As(err, &te) {
			switch te.Code {
			case wf.CodeNestedDelegation:
				a.logEvents(ctx, event(wf.EventDelegationRejected, m.TaskID, m.FromAgent, map[string]any{"reason": wf.ReasonNestedDelegation}))
			case wf.CodeTaskIDMismatch:
				a.logEvents(ctx, event(wf.EventRejected, m.TaskID, m.FromAgent, map[string]any{"reason": wf.ReasonTaskIDMismatch}))
			case wf.CodeTaskNotFound:
				// The workflow has ended: a done task takes every message
				// as a no-op.
				if done, ok := a.ended(ctx, m.TaskID); ok {
					httpapi.WriteJSON(w, http.StatusOK, done)
					return
				}
			}
		}
		a.srv.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, res)
}

// ended returns the no-op result of a task whose workflow has ended.
func (a *API) ended(ctx context.Context, taskID string) (wf.Result, bool) {
	row, err := a.store.AOFTask(ctx, taskID)
	if err != nil || row.Status != string(wf.StatusDone) {
		return wf.Result{}, false
	}
	var t wf.Task
	if json.Unmarshal(row.Body, &t) != nil {
		return wf.Result{}, false
	}
	return wf.Result{Task: t, Note: "the task is done"}, true
}

func depthOf(row ssot.AOFTask) int {
	var t wf.Task
	if json.Unmarshal(row.Body, &t) != nil {
		return 0
	}
	return t.Metadata.DelegationDepth
}

// CreateRequest creates an AOF task.
type CreateRequest struct {
	// TaskID is allocated as TASK-<today>-NNN when empty.
	TaskID   string `json:"taskId,omitempty"`
	Title    string `json:"title"`
	Body     string `json:"body,omitempty"`
	Assignee string `json:"assignee,omitempty"`
	// Status is backlog or ready (the default).
	Status string `json:"status,omitempty"`
	// ReviewRequired defaults to true.
	ReviewRequired *bool  `json:"reviewRequired,omitempty"`
	ParentTaskID   string `json:"parentTaskId,omitempty"`
}

func (a *API) postTask(w http.ResponseWriter, r *http.Request) {
	var in CreateRequest
	if err := a.srv.Decode(w, r, &in); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	ctx := r.Context()
	var fs []amp.FieldError
	if strings.TrimSpace(in.Title) == "" {
		fs = append(fs, amp.FieldError{Path: "title", Problem: "required"})
	}
	if in.TaskID != "" && !wf.ValidTaskID(in.TaskID) {
		fs = append(fs, amp.FieldError{Path: "taskId", Problem: fmt.Sprintf("%q does not match TASK-YYYY-MM-DD-NNN", in.TaskID)})
	}
	status := wf.StatusReady
	if in.Status != "" {
		status = wf.Status(in.Status)
		if status != wf.StatusBacklog && status != wf.StatusReady {
			fs = append(fs, amp.FieldError{Path: "status", Problem: "must be backlog or ready"})
		}
	}
	if in.ParentTaskID != "" && !wf.ValidTaskID(in.ParentTaskID) {
		fs = append(fs, amp.FieldError{Path: "parentTaskId", Problem: fmt.Sprintf("%q does not match TASK-YYYY-MM-DD-NNN", in.ParentTaskID)})
	}
	if len(fs) > 0 {
		a.refuse(w, r, task.CodeInvalid, fs, "invalid AOF task: %s", fieldLines(fs))
		return
	}
	t := wf.Task{TaskID: in.TaskID, Title: in.Title, Body: in.Body, Assignee: in.Assignee, Status: status,
		ParentTaskID: in.ParentTaskID, Metadata: wf.Metadata{ReviewRequired: in.ReviewRequired == nil || *in.ReviewRequired}}
	if in.ParentTaskID != "" {
		parent, err := a.store.AOFTask(ctx, in.ParentTaskID)
		if errors.Is(err, ssot.ErrNotFound) {
			a.refuse(w, r, wf.CodeParentNotFound, []amp.FieldError{{Path: "parentTaskId", Problem: "not found"}}, "parent task %s not found", in.ParentTaskID)
			return
		}
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		t.Metadata.DelegationDepth = depthOf(parent) + 1
		if t.Metadata.DelegationDepth > 1 {
			a.refuse(w, r, wf.CodeNestedDelegation, []amp.FieldError{{Path: "parentTaskId", Problem: "is a delegated task itself"}},
				"parent task %s has delegation depth %d: a delegated task cannot delegate again", in.ParentTaskID, depthOf(parent))
			return
		}
	}
	if t.TaskID == "" {
		id, err := a.store.NextAOFTaskID(ctx, a.now().UTC().Format(time.DateOnly), func(id string) (bool, error) {
			_, err := a.store.AOFTask(ctx, id)
			if errors.Is(err, ssot.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		t.TaskID = id
	} else if _, err := a.store.AOFTask(ctx, t.TaskID); err == nil {
		a.refuse(w, r, task.CodeConflict, []amp.FieldError{{Path: "taskId", Problem: "taken"}}, "AOF task %s exists already", t.TaskID)
		return
	}
	out, err := a.tasks.Create(ctx, t)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusCreated, out)
}

func fieldLines(fs []amp.FieldError) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// TaskView is a task with its artifacts.
type TaskView struct {
	wf.Task
	// Artifacts are the task's files by name: JSON ones as JSON, the
	// rest as text.
	Artifacts map[string]any `json:"artifacts"`
}

// pathTask reads the {id} of a path; a malformed id is not found.
func (a *API) pathTask(w http.ResponseWriter, r *http.Request) (ssot.AOFTask, bool) {
	id := r.PathValue("id")
	row, err := a.store.AOFTask(r.Context(), id)
	if errors.Is(err, ssot.ErrNotFound) || (err == nil && !wf.ValidTaskID(id)) {
		a.refuse(w, r, wf.CodeTaskNotFound, nil, "task %s not found", id)
		return row, false
	}
	if err != nil {
		a.srv.Error(w, r, err)
		return row, false
	}
	return row, true
}

func (a *API) getTask(w http.ResponseWriter, r *http.Request) {
	row, ok := a.pathTask(w, r)
	if !ok {
		return
	}
	var v TaskView
	if err := json.Unmarshal(row.Body, &v.Task); err != nil {
		a.srv.Error(w, r, fmt.Errorf("reading AOF task %s: %w", row.TaskID, err))
		return
	}
	arts, err := a.store.AOFArtifacts(r.Context(), row.TaskID)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	v.Artifacts = map[string]any{}
	for _, art := range arts {
		if strings.HasSuffix(art.Name, ".json") && json.Valid([]byte(art.Body)) {
			v.Artifacts[art.Name] = json.RawMessage(art.Body)
		} else {
			v.Artifacts[art.Name] = art.Body
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
}

func (a *API) postDispatch(w http.ResponseWriter, r *http.Request) {
	var in wf.DispatchInput
	if err := a.srv.Decode(w, r, &in); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	row, ok := a.pathTask(w, r)
	if !ok {
		return
	}
	res, err := a.tasks.Dispatch(r.Context(), row.TaskID, in)
	a.answer(w, r, row, res, err)
}

func (a *API) postHeartbeat(w http.ResponseWriter, r *http.Request) {
	var in wf.HeartbeatInput
	if err := a.srv.Decode(w, r, &in); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	row, ok := a.pathTask(w, r)
	if !ok {
		return
	}
	res, err := a.tasks.Heartbeat(r.Context(), row.TaskID, in)
	a.answer(w, r, row, res, err)
}

// answer writes a handler's result; a task whose workflow ended (done)
// refuses as invalid_transition.
func (a *API) answer(w http.ResponseWriter, r *http.Request, row ssot.AOFTask, res wf.Result, err error) {
	var te *task.Error
	if errors.As(err, &te) && te.Code == wf.CodeTaskNotFound {
		err = task.Errorf(wf.CodeInvalidTransition, "task %s is done", row.TaskID)
	}
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, res)
}

// EventsResponse is a page of logged events.
type EventsResponse struct {
	Events []ssot.AOFEvent `json:"events"`
	Next   string          `json:"next,omitempty"`
}

func (a *API) getEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := ssot.Page{Cursor: q.Get("cursor")}
	if l := q.Get("limit"); l != "" {
		if _, err := fmt.Sscan(l, &p.Limit); err != nil {
			a.refuse(w, r, task.CodeInvalid, []amp.FieldError{{Path: "limit", Problem: "not a number"}}, "limit: not a number")
			return
		}
	}
	evs, next, err := a.store.AOFEvents(r.Context(), q.Get("taskId"), p)
	if err != nil {
		var inv *ssot.InvalidError
		if errors.As(err, &inv) {
			a.refuse(w, r, task.CodeInvalid, nil, "%s", inv.Error())
			return
		}
		a.srv.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, EventsResponse{Events: evs, Next: next})
}

// SessionEndResponse lists the tasks whose run result was applied.
type SessionEndResponse struct {
	Applied []wf.Task `json:"applied"`
}

func (a *API) postSessionEnd(w http.ResponseWriter, r *http.Request) {
	var in wf.SessionEndInput
	if err := a.srv.Decode(w, r, &in); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	ctx := r.Context()
	out := SessionEndResponse{Applied: []wf.Task{}}
	cursor := ""
	for {
		rows, next, err := a.store.AOFTasks(ctx, string(wf.StatusInProgress), ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		for _, row := range rows {
			res, err := a.tasks.SessionEnd(ctx, row.TaskID, in)
			if err != nil {
				a.log.Warn("session end of an AOF task", "task", row.TaskID, "error", err)
				continue
			}
			if res.Changed {
				out.Applied = append(out.Applied, res.Task)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}
