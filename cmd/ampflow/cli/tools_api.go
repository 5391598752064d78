package cli

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

// waitQuery is "?wait=…" for a long poll of at most maxInboxWait.
func waitQuery(wait time.Duration) string {
	if wait <= 0 {
		return ""
	}
	return "?wait=" + min(wait, maxInboxWait).Round(time.Second).String()
}

// ToolCall asks the API to decide a tool call (POST /v1/tool-calls),
// waiting up to wait for an ask's answer.
func (c *apiClient) ToolCall(ctx context.Context, in task.ToolCallRequest, wait time.Duration) (task.ToolCall, error) {
	var out task.ToolCall
	err := c.do(ctx, http.MethodPost, "/v1/tool-calls"+waitQuery(wait), nil, in, &out)
	return out, err
}

// ToolCallGet reads a tool call (GET /v1/tool-calls/{id}), waiting up to
// wait for it to be decided.
func (c *apiClient) ToolCallGet(ctx context.Context, id string, wait time.Duration) (task.ToolCall, error) {
	var out task.ToolCall
	err := c.do(ctx, http.MethodGet, "/v1/tool-calls/"+url.PathEscape(id)+waitQuery(wait), nil, nil, &out)
	return out, err
}

// TaskToolCalls lists a task's tool calls (GET /v1/tasks/{id}/tool-calls).
func (c *apiClient) TaskToolCalls(ctx context.Context, taskID string, filter url.Values) ([]task.ToolCall, error) {
	var out task.ToolCallList
	path := "/v1/tasks/" + url.PathEscape(taskID) + "/tool-calls"
	if len(filter) > 0 {
		path += "?" + filter.Encode()
	}
	err := c.do(ctx, http.MethodGet, path, nil, nil, &out)
	return out.ToolCalls, err
}
