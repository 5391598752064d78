package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows"
)

// Settings the API client's errors name.
const (
	urlSetting   = "api.url / AMPFLOW_API_URL"
	tokenSetting = "api.token / AMPFLOW_API_TOKEN"
)

// urlSetting names where the client's api.url comes from: the settings,
// and the configuration file it was read from, if any.
func (c *apiClient) urlSetting() string { return c.setting(urlSetting) }

// tokenSetting names where the client's api.token comes from.
func (c *apiClient) tokenSetting() string { return c.setting(tokenSetting) }

func (c *apiClient) setting(s string) string {
	if c.file == "" {
		return s
	}
	return s + " (read from " + c.file + ")"
}

// maxInboxWait is the longest wait one GET /v1/inbox may ask for (the
// server's MaxWait); longer waits ask again.
const maxInboxWait = 60 * time.Second

// maxListLimit is the most items one page of a listing holds.
const maxListLimit = 1000

// apiClient reaches the task workflows and the SSOT through ampflow's
// HTTP API. It implements workflows.Tasks; who the caller is (the decider,
// the coordinator, the scope of idempotency keys) is the server's to say,
// from the token.
type apiClient struct {
	base  string // without a trailing slash
	token string
	http  *http.Client
	// file is the configuration file base and token were read from, if
	// any: errors name it.
	file string
}

var _ workflows.Tasks = (*apiClient)(nil)

// newAPIClient returns a client of the API at base, presenting token
// when it is not empty.
func newAPIClient(base, token string) *apiClient {
	// No client timeout: a long-polling inbox request takes a minute, and
	// every command's context bounds its requests.
	return &apiClient{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{}}
}

// apiTasks is the default of Options.Tasks: the HTTP API at api.url.
func (a *App) apiTasks() (workflows.Tasks, error) {
	return a.api()
}

// api returns the HTTP API client of the configuration: only api.url and
// api.token are read (config.LoadClient), so the server's own file, in
// the folder the CLI runs in, needs none of its secrets to serve.
func (a *App) api() (*apiClient, error) {
	cfg, err := a.clientConfig()
	if err != nil {
		return nil, err
	}
	c := newAPIClient(cfg.API.URL, cfg.API.Token)
	c.file = cfg.File
	return c, nil
}

// clientConfig reads the keys a client of the API needs.
func (a *App) clientConfig() (config.Client, error) {
	return config.LoadClient(a.configFile, a.LookupEnv)
}

type idempotencyKeyCtx struct{}

// withIdempotencyKey makes a start under ctx carry key as its
// Idempotency-Key.
func withIdempotencyKey(ctx context.Context, key string) context.Context {
	if key == "" {
		return ctx
	}
	return context.WithValue(ctx, idempotencyKeyCtx{}, key)
}

// idempotencyKeyOf returns the key withIdempotencyKey put in ctx.
func idempotencyKeyOf(ctx context.Context) string {
	k, _ := ctx.Value(idempotencyKeyCtx{}).(string)
	return k
}

// startBody is the body of POST /v1/tasks. The coordinator is left to the
// server: the token's name.
type startBody struct {
	TaskID   string           `json:"task_id,omitempty"`
	Plan     amp.TaskDispatch `json:"plan"`
	Handling task.Handling    `json:"handling,omitempty"`
	// ExternalID, Source and ExternalURL name the tracker's item the
	// task is for (task.Origin).
	ExternalID  string `json:"external_id,omitempty"`
	Source      string `json:"source,omitempty"`
	ExternalURL string `json:"external_url,omitempty"`
	// CreateBranch makes the plan's branch when the repository lacks it.
	CreateBranch bool `json:"create_branch,omitempty"`
	// Priority orders the task's runs in a runner host's queue.
	Priority int `json:"priority,omitempty"`
}

// Start starts a task under in.TaskID.
func (c *apiClient) Start(ctx context.Context, in task.Input) error {
	_, err := c.start(ctx, in)
	return err
}

// StartNext starts a task under the next free id of the server's year.
func (c *apiClient) StartNext(ctx context.Context, in task.Input, _ int) (string, error) {
	in.TaskID = ""
	return c.start(ctx, in)
}

func (c *apiClient) start(ctx context.Context, in task.Input) (string, error) {
	var out struct {
		TaskID string `json:"task_id"`
	}
	h := http.Header{}
	if k := idempotencyKeyOf(ctx); k != "" {
		h.Set("Idempotency-Key", k)
	}
	body := startBody{TaskID: in.TaskID, Plan: in.Plan, Handling: in.Handling, CreateBranch: in.CreateBranch, Priority: in.Priority}
	if o := in.Origin; o != nil {
		body.ExternalID, body.Source, body.ExternalURL = o.ExternalID, o.Source, o.URL
	}
	err := c.do(ctx, http.MethodPost, "/v1/tasks", h, body, &out)
	return out.TaskID, err
}

// Submit hands a whole envelope or ACK record to its task.
func (c *apiClient) Submit(ctx context.Context, raw []byte) (task.SubmitResult, error) {
	var out task.SubmitResult
	err := c.do(ctx, http.MethodPost, "/v1/messages", nil, json.RawMessage(raw), &out)
	return out, err
}

// Ack acknowledges, as role, a message waiting in its inbox.
func (c *apiClient) Ack(ctx context.Context, msgID string, as amp.Role) (task.SubmitResult, error) {
	var out task.SubmitResult
	err := c.do(ctx, http.MethodPost, "/v1/acks", nil, map[string]any{"msg_id": msgID, "as": as}, &out)
	return out, err
}

// Decide takes in.DecisionID, or whatever decision is pending when it is
// empty (with its digest, unless in.Digest pins one). The server routes
// the answer by the decision's subject and decides as the token's name;
// taskID only finds the pending decision, and in.By and in.Channel are
// not sent.
func (c *apiClient) Decide(ctx context.Context, taskID string, in decision.Answer) (task.DecideResult, error) {
	id := in.DecisionID
	if id == "" {
		st, err := c.State(ctx, taskID)
		if err != nil {
			return task.DecideResult{}, err
		}
		if st.Pending == nil {
			return task.DecideResult{}, task.Errorf(task.CodeUnexpected, "task %s has no pending decision (status %s)", taskID, st.Status)
		}
		id = st.Pending.ID
		if in.Digest == "" {
			in.Digest = st.Pending.Digest
		}
	}
	body := map[string]string{"option": in.Option, "digest": in.Digest}
	if in.Note != "" {
		body["note"] = in.Note
	}
	var out task.DecideResult
	err := c.do(ctx, http.MethodPost, "/v1/decisions/"+url.PathEscape(id), nil, body, &out)
	return out, err
}

// Cancel ends a task; the server cancels as the token's name.
func (c *apiClient) Cancel(ctx context.Context, taskID string, in task.CancelInput) (task.ChangeResult, error) {
	var out task.ChangeResult
	err := c.do(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(taskID)+"/cancel", nil, map[string]string{"reason": in.Reason}, &out)
	return out, err
}

// Replan replaces a task's remaining subtasks; the server replans as the
// token's name.
func (c *apiClient) Replan(ctx context.Context, taskID string, in task.ReplanInput) (task.ChangeResult, error) {
	body := struct {
		Subtasks []amp.Subtask `json:"subtasks"`
		Note     string        `json:"note,omitempty"`
	}{in.Subtasks, in.Note}
	var out task.ChangeResult
	err := c.do(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(taskID)+"/replan", nil, body, &out)
	return out, err
}

// Heartbeat sends an agent's sign of life.
func (c *apiClient) Heartbeat(ctx context.Context, taskID string, in task.HeartbeatInput) error {
	body := map[string]any{"task_id": taskID, "from": in.From}
	if in.Note != "" {
		body["note"] = in.Note
	}
	return c.do(ctx, http.MethodPost, "/v1/heartbeats", nil, body, nil)
}

// State reads a task's state.
func (c *apiClient) State(ctx context.Context, taskID string) (task.State, error) {
	var out task.State
	err := c.do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(taskID), nil, nil, &out)
	return out, err
}

// List lists tasks newest first: one page of at most limit; 0 asks for
// as many as one answer holds (maxListLimit).
func (c *apiClient) List(ctx context.Context, status task.Status, limit int) ([]workflows.TaskSummary, error) {
	if limit <= 0 || limit > maxListLimit {
		limit = maxListLimit
	}
	out, _, err := c.TasksPage(ctx, status, pageQuery{Limit: limit})
	return out, err
}

// TasksPage reads one page of tasks, newest first, and the next page's
// cursor.
func (c *apiClient) TasksPage(ctx context.Context, status task.Status, p pageQuery) ([]workflows.TaskSummary, string, error) {
	q := p.values()
	if status != "" {
		q.Set("status", string(status))
	}
	if p.Source != "" {
		q.Set("source", p.Source)
	}
	var out struct {
		Tasks      []workflows.TaskSummary `json:"tasks"`
		NextCursor string                  `json:"next_cursor"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/tasks?"+q.Encode(), nil, nil, &out)
	return out.Tasks, out.NextCursor, err
}

// values are the query parameters of p.
func (p pageQuery) values() url.Values {
	q := url.Values{}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

// everything reads every page, the largest the API answers.
var everything = pageFlags{limit: maxListLimit, all: true}

// Inbox lists the messages awaiting role, without waiting.
func (c *apiClient) Inbox(ctx context.Context, role amp.Role) ([]amp.Message, error) {
	return c.InboxWait(ctx, role, 0)
}

// InboxWait long-polls the inbox of role until a message is there or
// wait has passed, and answers the first page of them.
func (c *apiClient) InboxWait(ctx context.Context, role amp.Role, wait time.Duration) ([]amp.Message, error) {
	msgs, _, err := c.InboxPage(ctx, role, wait, pageQuery{})
	return msgs, err
}

// InboxPage long-polls one page of the inbox of role until it has a
// message or wait has passed, asking again past the server's longest wait.
func (c *apiClient) InboxPage(ctx context.Context, role amp.Role, wait time.Duration, p pageQuery) ([]amp.Message, string, error) {
	deadline := time.Now().Add(wait)
	for {
		step := min(max(time.Until(deadline), 0), maxInboxWait).Truncate(time.Millisecond)
		q := p.values()
		q.Set("role", string(role))
		if p.Mine {
			q.Set("mine", "true")
		}
		if step > 0 {
			q.Set("wait", step.String())
		}
		var out struct {
			Messages   []amp.Message `json:"messages"`
			NextCursor string        `json:"next_cursor"`
		}
		if err := c.do(ctx, http.MethodGet, "/v1/inbox?"+q.Encode(), nil, nil, &out); err != nil {
			return nil, "", err
		}
		if len(out.Messages) > 0 || time.Until(deadline) <= 0 || ctx.Err() != nil {
			if out.Messages == nil {
				out.Messages = []amp.Message{}
			}
			return out.Messages, out.NextCursor, nil
		}
	}
}

// Pending lists every open decision.
func (c *apiClient) Pending(ctx context.Context) ([]decision.Decision, error) {
	ds, _, err := readPages(ctx, everything, c.DecisionsPage)
	return ds, err
}

// DecisionsPage reads one page of the open decisions, oldest first.
func (c *apiClient) DecisionsPage(ctx context.Context, p pageQuery) ([]decision.Decision, string, error) {
	var out struct {
		Decisions  []decision.Decision `json:"decisions"`
		NextCursor string              `json:"next_cursor"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/decisions?"+p.values().Encode(), nil, nil, &out)
	return out.Decisions, out.NextCursor, err
}

// History reads all of a task's SSOT records in the order they were
// written.
func (c *apiClient) History(ctx context.Context, taskID string) ([]ssot.Record, error) {
	recs, _, err := readPages(ctx, everything, func(ctx context.Context, p pageQuery) ([]ssot.Record, string, error) {
		return c.HistoryPage(ctx, taskID, p)
	})
	return recs, err
}

// HistoryPage reads one page of a task's SSOT records.
func (c *apiClient) HistoryPage(ctx context.Context, taskID string, p pageQuery) ([]ssot.Record, string, error) {
	var out struct {
		Records    []ssot.Record `json:"records"`
		NextCursor string        `json:"next_cursor"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(taskID)+"/history?"+p.values().Encode(), nil, nil, &out)
	return out.Records, out.NextCursor, err
}

// Record reads one SSOT record by its id.
func (c *apiClient) Record(ctx context.Context, id string) (ssot.Record, error) {
	var out ssot.Record
	err := c.do(ctx, http.MethodGet, "/v1/records/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// do sends one request and decodes a 2xx answer into out; any other
// answer becomes the *task.Error of its error body.
func (c *apiClient) do(ctx context.Context, method, path string, h http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return task.Errorf(task.CodeInvalid, "cannot build a request to the ampflow API at %s: %v; set %s", c.base, err, c.urlSetting())
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return &task.Error{Code: task.CodeUnavailable, Message: fmt.Sprintf("reading the answer to %s %s from %s: %v", method, path, c.base, err), Err: err}
	}
	if resp.StatusCode >= 300 {
		return c.answerError(resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &task.Error{Code: task.CodeInternal, Err: err,
			Message: fmt.Sprintf("the answer to %s %s from %s is not what ampflow's API answers (%v): is %s the ampflow API?", method, path, c.base, err, c.urlSetting())}
	}
	return nil
}
