package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/runcred"
	"github.com/ampflow/ampflow/amp/task"
)

// RunRoutes are the routes an agent run's credential is taken on: its
// tool hook's, and those its MCP server's tools call (the gate's take
// agent keys, not tokens). Every other route refuses it, whatever its
// role would allow.
var RunRoutes = map[string]bool{
	"POST /mcp":                      true,
	"POST /v1/tool-calls":            true,
	"GET /v1/tool-calls/{id}":        true,
	"POST /v1/hooks/{cli}":           true,
	"GET /v1/tasks/{id}":             true,
	"GET /v1/tasks/{id}/transcript":  true,
	"POST /v1/messages":              true,
	"POST /v1/acks":                  true,
	"POST /v1/heartbeats":            true,
	"GET /v1/inbox":                  true,
	"POST /v1/leases":                true,
	"GET /v1/leases":                 true,
	"POST /v1/leases/{id}/heartbeat": true,
	"DELETE /v1/leases/{id}":         true,
	"POST /v1/events":                true,
	"GET /v1/events/inbox":           true,
	"GET /v1/events/search":          true,
	"GET /v1/events/{id}":            true,
	"GET /v1/events/{id}/thread":     true,
	"POST /v1/events/{id}/read":      true,
}

// runMay refuses a run's request outside what its credential binds: a
// route not in RunRoutes, or another task than its own, named in the
// path (/v1/tasks/{id}) or as the body's task_id. The body is read and
// put back for the handler.
func (s *Server) runMay(pattern string, run *runcred.Claims, r *http.Request) error {
	if !RunRoutes[pattern] {
		return task.Errorf(task.CodeForbidden, "%s takes no agent run's credential: a run (%s of %s) may call only its tool hook's and its MCP tools' routes",
			pattern, run.Role, run.Task)
	}
	_, path, _ := strings.Cut(pattern, " ")
	if strings.HasPrefix(path, "/v1/tasks/{id}") && r.PathValue("id") != run.Task {
		return otherTask(run, r.PathValue("id"))
	}
	if r.Body == nil || r.Method == http.MethodGet || r.Method == http.MethodDelete {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.maxBody+1))
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return err
	}
	var in struct {
		TaskID *string `json:"task_id"`
		MsgID  *string `json:"msg_id"`
	}
	// A body that is not JSON is the handler's to refuse.
	if json.Unmarshal(body, &in) != nil {
		return nil
	}
	if in.TaskID != nil && *in.TaskID != run.Task {
		return otherTask(run, *in.TaskID)
	}
	if in.MsgID != nil {
		if _, t, ok := amp.ParseMsgID(*in.MsgID); ok && t != run.Task {
			return otherTask(run, t)
		}
	}
	return nil
}

func otherTask(run *runcred.Claims, other string) error {
	return task.Errorf(task.CodeForbidden, "this agent run's credential is for %s's %s only, not %q", run.Task, run.Role, other)
}

// MayTask refuses a request whose caller is an agent run bound to
// another task than taskID; a handler calls it when the task comes from
// a record rather than the path or the body (GET /v1/tool-calls/{id}).
func MayTask(r *http.Request, taskID string) error {
	if c := callerOf(r); c.run != nil && c.run.Task != taskID {
		return otherTask(c.run, taskID)
	}
	return nil
}
