package toolhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

// What became of a tool call (Call.Decision), and who decides by the
// policy: amp/task's values, which this package cannot import and stay
// small.
const (
	Allow    = "allow"
	Deny     = "deny"
	Pending  = "pending"
	ByPolicy = "policy"
)

// MaxPoll is the longest wait one request to the API may ask for (its
// long polls' limit); longer waits ask again.
const MaxPoll = 60 * time.Second

// Request is the body of POST /v1/tool-calls (task.ToolCallRequest).
type Request struct {
	TaskID   string          `json:"task_id"`
	CLI      string          `json:"cli,omitempty"`
	Tool     string          `json:"tool"`
	Input    json.RawMessage `json:"input,omitempty"`
	CWD      string          `json:"cwd,omitempty"`
	Worktree string          `json:"worktree,omitempty"`
}

// Call is what the hook reads of the API's answer (task.ToolCall).
type Call struct {
	ID         string        `json:"id"`
	Decision   string        `json:"decision"`
	Reason     string        `json:"reason,omitempty"`
	By         string        `json:"by,omitempty"`
	Channel    string        `json:"channel,omitempty"`
	Rule       string        `json:"rule,omitempty"`
	AskTimeout task.Duration `json:"ask_timeout,omitempty"`
}

func waitQuery(wait time.Duration) string {
	if wait <= 0 {
		return ""
	}
	return "?wait=" + min(wait, MaxPoll).Round(time.Second).String()
}

func (h *Hook) toolCall(ctx context.Context, in Request, wait time.Duration) (Call, error) {
	return h.do(ctx, http.MethodPost, "/v1/tool-calls"+waitQuery(wait), in)
}

func (h *Hook) toolCallGet(ctx context.Context, id string, wait time.Duration) (Call, error) {
	return h.do(ctx, http.MethodGet, "/v1/tool-calls/"+url.PathEscape(id)+waitQuery(wait), nil)
}

func (h *Hook) do(ctx context.Context, method, path string, body any) (Call, error) {
	var out Call
	if h.APIURL == "" {
		return out, fmt.Errorf("no API to ask: %s is not set", EnvAPIURL)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return out, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(h.APIURL, "/")+path, rd)
	if err != nil {
		return out, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	c := h.HTTP
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return out, fmt.Errorf("reading %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return out, fmt.Errorf("%s (%s)", e.Error.Message, e.Error.Code)
		}
		return out, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("reading %s %s: %w", method, path, err)
	}
	if out.ID == "" || out.Decision == "" {
		return out, errors.New("the API's answer names no tool call")
	}
	return out, nil
}
