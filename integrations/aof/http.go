package aof

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// Records is what the AOF routes read and log to.
type Records interface {
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

// EventLog takes the events the routes log themselves.
type EventLog interface {
	SaveAOF(ctx context.Context, in ssot.AOFSave) error
}

// Options configure the AOF routes: Tasks and Store are required.
type Options struct {
	Tasks Tasks
	Store Records
	// Events takes the events the routes log themselves (the wiring
	// gives the writer that also mirrors them under aof.data_dir); nil
	// logs them to the store only.
	Events EventLog
	// DataDir is aof.data_dir: when set, a completion report whose
	// summaryRef or handoffRef names no file there is taken with a
	// warning.
	DataDir string
	Logger  *slog.Logger
}

// API serves AOF/1 on ampflow's HTTP API.
type API struct {
	srv     *httpapi.Server
	tasks   Tasks
	store   Records
	events  EventLog
	dataDir string
	log     *slog.Logger
	now     func() time.Time
}

// Register builds the API and adds the AOF routes to api.
func Register(api *httpapi.Server, o Options) *API {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Events == nil {
		o.Events = o.Store
	}
	a := &API{srv: api, tasks: o.Tasks, store: o.Store, events: o.Events, dataDir: o.DataDir, log: o.Logger, now: time.Now}
	api.Add(Spec(), a.Routes()...)
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
	wf.CodeParentConflict:    http.StatusConflict,
	wf.CodeInvalidTransition: http.StatusConflict,
	wf.CodeNotRunning:        http.StatusConflict,
	wf.CodeLeaseHeld:         http.StatusConflict,
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
		{Pattern: "GET /v1/aof/tasks", Handler: a.getTasks, Operation: opListTasks},
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
	if err := a.events.SaveAOF(context.WithoutCancel(ctx), ssot.AOFSave{Events: evs}); err != nil {
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
	if !a.speaksAs(w, r, claims(m)...) {
		return
	}
	if m.Completion != nil && a.dataDir != "" {
		m.Warnings = append(m.Warnings, missingRefs(a.dataDir, m.TaskID, m.Completion)...)
	}
	ctx := r.Context()
	received := map[string]any{"type": m.Type, "toAgent": m.ToAgent, "sentAt": wf.Stamp(m.SentAt), "payload": payloadOf(m)}
	if len(m.Warnings) > 0 {
		received["warnings"] = m.Warnings
		a.log.Warn("AOF message taken with warnings", "task", m.TaskID, "type", m.Type, "warnings", m.Warnings)
	}
	a.logEvents(ctx, event(wf.EventReceived, m.TaskID, m.FromAgent, received))
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
	in := wf.MessageInput{Message: m, Agent: agentOf(r)}
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
		in.ParentOwners = ownersOf(parent)
	}
	res, err := a.tasks.Message(ctx, in)
	if err != nil {
		var te *task.Error
		if errors.As(err, &te) {
			switch te.Code {
			case wf.CodeNestedDelegation, wf.CodeParentConflict:
				a.logEvents(ctx, event(wf.EventDelegationRejected, m.TaskID, m.FromAgent, map[string]any{"reason": string(te.Code),
					"parentTaskId": m.Handoff.ParentTaskID}))
			case wf.CodeTaskIDMismatch:
				a.logEvents(ctx, event(wf.EventRejected, m.TaskID, m.FromAgent, map[string]any{"reason": wf.ReasonTaskIDMismatch}))
			case task.CodeForbidden:
				a.logEvents(ctx, event(wf.EventRejected, m.TaskID, m.FromAgent, map[string]any{"reason": string(task.CodeForbidden), "type": m.Type}))
			case wf.CodeNotRunning:
				a.logEvents(ctx, event(wf.EventRejected, m.TaskID, m.FromAgent, map[string]any{"reason": string(wf.CodeNotRunning), "type": m.Type}))
			case wf.CodeTaskNotFound:
				// The workflow has ended: a done task takes a repeat of
				// its report, and any other message, as a no-op; another
				// report is refused as the workflow refuses one.
				if done, ok := a.ended(ctx, m.TaskID); ok {
					if m.Type == wf.TypeCompletionReport && !wf.RepeatsResult(done.Task, m) {
						a.logEvents(ctx, event(wf.EventRejected, m.TaskID, m.FromAgent, map[string]any{"reason": string(wf.CodeNotRunning), "type": m.Type}))
						a.refuse(w, r, wf.CodeNotRunning, nil, "task %s is done: a completion report is taken only while a run of it goes on", m.TaskID)
						return
					}
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

// ownersOf is a stored task's owners (wf.Owners).
func ownersOf(row ssot.AOFTask) []string {
	var t wf.Task
	if json.Unmarshal(row.Body, &t) != nil {
		return nil
	}
	return wf.Owners(t)
}

func depthOf(row ssot.AOFTask) int {
	var t wf.Task
	if json.Unmarshal(row.Body, &t) != nil {
		return 0
	}
	return t.Metadata.DelegationDepth
}

// payloadOf is a valid message's payload, as logged with its receipt.
func payloadOf(m wf.Message) any {
	switch {
	case m.Completion != nil:
		return m.Completion
	case m.Status != nil:
		return m.Status
	case m.Handoff != nil:
		return m.Handoff
	case m.Reply != nil:
		return m.Reply
	}
	return nil
}
