package aof

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// TasksResponse is a page of AOF tasks.
type TasksResponse struct {
	Tasks []wf.Task `json:"tasks"`
	// Next reads the page after; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// AssigneeMe in GET /v1/aof/tasks?assignee= is the token's own name.
const AssigneeMe = "me"

// maxScan bounds the stored tasks one listing reads to fill a filtered
// page; past it the page ends early with its next cursor.
const maxScan = 10 * ssot.MaxLimit

// taskQuery is what a listing asks for.
type taskQuery struct {
	status   string
	assignee string
	limit    int
	cursor   string
}

func (a *API) readTaskQuery(r *http.Request) (taskQuery, []amp.FieldError) {
	q := r.URL.Query()
	out := taskQuery{limit: ssot.DefaultLimit, cursor: q.Get("cursor")}
	var fs []amp.FieldError
	if v := q.Get("status"); v != "" {
		st, ok := wf.ParseStatus(v)
		if !ok {
			fs = append(fs, amp.FieldError{Path: "status", Problem: fmt.Sprintf("%q: must be one of %v", v, wf.Statuses())})
		}
		out.status = string(st)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ssot.MaxLimit {
			fs = append(fs, amp.FieldError{Path: "limit", Problem: fmt.Sprintf("must be from 1 to %d", ssot.MaxLimit)})
		}
		out.limit = n
	}
	switch v := q.Get("assignee"); {
	case v == AssigneeMe:
		c := httpapi.CallerOf(r)
		if c.Open {
			fs = append(fs, amp.FieldError{Path: "assignee", Problem: "me needs a token: the API has none, so name the agent"})
		}
		out.assignee = c.Name
	case len(v) > MaxName:
		fs = append(fs, amp.FieldError{Path: "assignee", Problem: fmt.Sprintf("%d bytes: at most %d", len(v), MaxName)})
	default:
		out.assignee = v
	}
	return out, fs
}

// getTasks lists AOF tasks by id, in a status, assigned or dispatched to
// an agent. With wait it long-polls as GET /v1/inbox does, until the page
// has a task.
func (a *API) getTasks(w http.ResponseWriter, r *http.Request) {
	tq, fs := a.readTaskQuery(r)
	if len(fs) > 0 {
		a.refuse(w, r, task.CodeInvalid, fs, "invalid listing: %s", fieldLines(fs))
		return
	}
	wait, poll, err := a.srv.LongPoll(w, r)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	var out TasksResponse
	err = httpapi.Poll(r.Context(), wait, poll, func() (bool, error) {
		var err error
		out, err = a.listTasks(r, tq)
		return len(out.Tasks) > 0, err
	})
	if r.Context().Err() != nil {
		return
	}
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// listTasks reads one page: the stored tasks in id order after the
// cursor, those of the assignee kept, at most maxScan read.
func (a *API) listTasks(r *http.Request, tq taskQuery) (TasksResponse, error) {
	out := TasksResponse{Tasks: []wf.Task{}}
	cursor, scanned := tq.cursor, 0
	for {
		rows, next, err := a.store.AOFTasks(r.Context(), tq.status, ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			return out, err
		}
		for _, row := range rows {
			scanned++
			var t wf.Task
			if err := json.Unmarshal(row.Body, &t); err != nil {
				return out, fmt.Errorf("reading AOF task %s: %w", row.TaskID, err)
			}
			cursor = row.TaskID
			if tq.assignee != "" && !assignedTo(t, tq.assignee) {
				continue
			}
			out.Tasks = append(out.Tasks, t)
			if len(out.Tasks) == tq.limit {
				break
			}
		}
		if len(out.Tasks) == tq.limit {
			if next != "" || cursor != rows[len(rows)-1].TaskID {
				out.NextCursor = cursor
			}
			return out, nil
		}
		if next == "" {
			return out, nil
		}
		if scanned >= maxScan {
			out.NextCursor = cursor
			return out, nil
		}
		cursor = next
	}
}

// assignedTo reports whether a task is an agent's work: assigned to it,
// or dispatched to it (its run's agent).
func assignedTo(t wf.Task, agent string) bool {
	return t.Assignee == agent || (t.Run != nil && t.Run.AgentID == agent)
}
