package aof

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

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
	for _, f := range []struct {
		path, v string
		limit   int
	}{{"title", in.Title, MaxText}, {"body", in.Body, MaxBody}, {"assignee", in.Assignee, MaxName}} {
		if len(f.v) > f.limit {
			fs = append(fs, amp.FieldError{Path: f.path, Problem: fmt.Sprintf("%d bytes: at most %d", len(f.v), f.limit)})
		}
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
	t := wf.Task{TaskID: in.TaskID, Title: in.Title, Body: in.Body, Assignee: in.Assignee, CreatedBy: httpapi.CallerOf(r).Name, Status: status,
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
			a.logEvents(ctx, event(wf.EventDelegationRejected, in.TaskID, httpapi.CallerOf(r).Name,
				map[string]any{"reason": wf.ReasonNestedDelegation, "parentTaskId": in.ParentTaskID}))
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

// DispatchRequest is the body of POST /v1/aof/tasks/{id}/dispatch: the
// workflow's input but for the signature the client adds.
type DispatchRequest struct {
	AgentID string `json:"agentId"`
	TTLMs   int64  `json:"ttlMs"`
}

// SessionEndRequest is the body of POST /v1/aof/session-end.
type SessionEndRequest struct {
	AgentID string `json:"agentId,omitempty"`
}

func (a *API) postDispatch(w http.ResponseWriter, r *http.Request) {
	var req DispatchRequest
	if err := a.srv.Decode(w, r, &req); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	in := wf.DispatchInput{AgentID: req.AgentID, TTLMs: req.TTLMs}
	row, ok := a.pathTask(w, r)
	if !ok {
		return
	}
	in.By = httpapi.CallerOf(r).Name
	res, err := a.tasks.Dispatch(r.Context(), row.TaskID, in)
	a.answer(w, r, row, res, err)
}

func (a *API) postHeartbeat(w http.ResponseWriter, r *http.Request) {
	var in wf.HeartbeatInput
	if err := a.srv.Decode(w, r, &in); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if in.AgentID == "" {
		in.AgentID = agentOf(r) // an agent's token beats as itself
	}
	if !a.speaksAs(w, r, claim{"agentId", in.AgentID}) {
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
	Events     []ssot.AOFEvent `json:"events"`
	NextCursor string          `json:"next_cursor,omitempty"`
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
	evs, next, err := a.store.AOFEvents(r.Context(), q.Get("task_id"), p)
	if err != nil {
		var inv *ssot.InvalidError
		if errors.As(err, &inv) {
			a.refuse(w, r, task.CodeInvalid, nil, "%s", inv.Error())
			return
		}
		a.srv.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, EventsResponse{Events: evs, NextCursor: next})
}

// SessionEndResponse lists the tasks whose run result was applied.
type SessionEndResponse struct {
	Applied []wf.Task `json:"applied"`
	// More says tasks with a result to apply were left for another call:
	// one call updates at most MaxSessionEnd.
	More bool `json:"more,omitempty"`
}

func (a *API) postSessionEnd(w http.ResponseWriter, r *http.Request) {
	var req SessionEndRequest
	if err := a.srv.Decode(w, r, &req); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	in := wf.SessionEndInput{AgentID: req.AgentID}
	// An empty agentId ends every agent's session: an agent's token
	// names its own, and an open API, where every caller is the same
	// admin, must name the agent rather than end every agent's runs.
	if in.AgentID == "" && httpapi.CallerOf(r).Open {
		a.refuse(w, r, task.CodeInvalid, []amp.FieldError{{Path: "agentId", Problem: "is required when the API has no tokens"}},
			"agentId: is required when the API has no tokens: name the agent whose session ended")
		return
	}
	if in.AgentID == "" {
		// An agent's token ends its own session; only an admin's or a
		// coordinator's ends every agent's.
		in.AgentID = agentOf(r)
	}
	if !a.speaksAs(w, r, claim{"agentId", in.AgentID}) {
		return
	}
	ctx := r.Context()
	out := SessionEndResponse{Applied: []wf.Task{}}
	cursor, sent := "", 0
	for !out.More {
		rows, next, err := a.store.AOFTasks(ctx, string(wf.StatusInProgress), ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		for _, row := range rows {
			if !endsWithSession(row, in.AgentID) {
				continue
			}
			if sent == MaxSessionEnd {
				out.More = true
				break
			}
			sent++
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

// MaxSessionEnd bounds the task workflows one session end updates; the
// rest wait for the next call (SessionEndResponse.More).
const MaxSessionEnd = 100

// endsWithSession reports whether a session end of agentID (every agent's
// when empty) has anything to apply to the task row: a pending run result,
// of that agent. The others are not sent an update, which would only grow
// their histories.
func endsWithSession(row ssot.AOFTask, agentID string) bool {
	var t wf.Task
	if json.Unmarshal(row.Body, &t) != nil {
		return true // let the workflow say
	}
	return t.Result != nil && (agentID == "" || t.Result.AgentID == agentID)
}
