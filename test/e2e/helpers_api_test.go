package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// apiClient speaks to the HTTP API of a dev process over keep-alive
// connections, as one token's holder (none on an open API) or one gate
// agent's key.
type apiClient struct {
	t      *testing.T
	base   string
	token  string
	header http.Header
	hc     *http.Client
}

// newAPIClient is a client of the API at addr (host:port) presenting token,
// when not empty.
func newAPIClient(t *testing.T, addr, token string) *apiClient {
	tr := &http.Transport{MaxIdleConns: 16, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}
	t.Cleanup(tr.CloseIdleConnections)
	return &apiClient{t: t, base: "http://" + addr, token: token, hc: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

// as is the client presenting token instead, over the same connections.
func (c *apiClient) as(token string) *apiClient {
	d := *c
	d.token = token
	return &d
}

// on is the client reporting to t, a subtest's.
func (c *apiClient) on(t *testing.T) *apiClient {
	d := *c
	d.t = t
	return &d
}

// with is the client sending the header name: value as well.
func (c *apiClient) with(name, value string) *apiClient {
	d := *c
	d.header = c.header.Clone()
	if d.header == nil {
		d.header = http.Header{}
	}
	d.header.Set(name, value)
	return &d
}

// reset drops the idle connections to a process that has gone.
func (c *apiClient) reset() { c.hc.Transport.(*http.Transport).CloseIdleConnections() }

// raw sends body as is and returns the status and the answer; it reports
// nothing to the test, so a goroutine may call it.
func (c *apiClient) raw(method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// call sends v as JSON (raw bytes when v is []byte) and decodes a 2xx
// answer into out; it returns the status and the answer.
func (c *apiClient) call(method, path string, v, out any) (int, []byte) {
	c.t.Helper()
	var body []byte
	switch b := v.(type) {
	case nil:
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(v); err != nil {
			c.t.Fatal(err)
		}
	}
	code, resp, err := c.raw(method, path, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	if out != nil && code < 300 {
		if err := json.Unmarshal(resp, out); err != nil {
			c.t.Fatalf("%s %s: decoding %q: %v", method, path, resp, err)
		}
	}
	return code, resp
}

// do is call for its status alone; an answer past 2xx is logged.
func (c *apiClient) do(method, path string, v, out any) int {
	c.t.Helper()
	code, resp := c.call(method, path, v, out)
	if code >= 300 {
		c.t.Logf("%s %s: %d %s", method, path, code, resp)
	}
	return code
}

// text GETs path and returns the body of a 200 answer.
func (c *apiClient) text(path string) string {
	c.t.Helper()
	code, b := c.call("GET", path, nil, nil)
	if code != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, code, b)
	}
	return string(b)
}

// inbox long-polls role's inbox until a message of typ of the task arrives.
func (c *apiClient) inbox(role amp.Role, taskID string, typ amp.Type) amp.Message {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var inbox struct {
			Messages []amp.Message `json:"messages"`
		}
		if code := c.do("GET", "/v1/inbox?role="+string(role)+"&wait=5s", nil, &inbox); code != http.StatusOK {
			c.t.Fatalf("inbox answered %d", code)
		}
		for _, m := range inbox.Messages {
			if m.TaskID == taskID && m.Type == typ {
				return m
			}
		}
	}
	c.t.Fatalf("no %s for %s in the %s inbox", typ, taskID, role)
	return amp.Message{}
}

// submit posts an agent record and wants 202; it reports whether the task
// took it as a duplicate.
func (c *apiClient) submit(path string, body []byte) bool {
	c.t.Helper()
	var res httpapi.SubmitResponse
	if code, resp := c.call("POST", path, body, &res); code != http.StatusAccepted {
		c.t.Fatalf("POST %s answered %d %s, want 202", path, code, resp)
	}
	return res.Duplicate
}

// startTask starts task id with plan and wants 201.
func (c *apiClient) startTask(id string, plan amp.TaskDispatch) {
	c.t.Helper()
	raw, err := json.Marshal(plan)
	if err != nil {
		c.t.Fatal(err)
	}
	if code, resp := c.call("POST", "/v1/tasks", httpapi.StartRequest{TaskID: id, Plan: raw}, nil); code != http.StatusCreated {
		c.t.Fatalf("starting %s: %d %s", id, code, resp)
	}
}

func (c *apiClient) state(id string) task.State {
	c.t.Helper()
	var st task.State
	if code, resp := c.call("GET", "/v1/tasks/"+id, nil, &st); code != http.StatusOK {
		c.t.Fatalf("reading %s: %d %s", id, code, resp)
	}
	return st
}

// waitFor polls the task until cond holds.
func (c *apiClient) waitFor(id, what string, within time.Duration, cond func(task.State) bool) task.State {
	c.t.Helper()
	var st task.State
	eventually(c.t, within, id+" "+what, func() (bool, error) {
		code, resp, err := c.raw("GET", "/v1/tasks/"+id, nil)
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("%d %s %v", code, resp, err)
		}
		st = task.State{}
		if err := json.Unmarshal(resp, &st); err != nil {
			return false, err
		}
		return cond(st), fmt.Errorf("status %s, last error %q%s", st.Status, st.LastError, pendingNote(st))
	})
	return st
}

// pendingNote says which decision a task waits for, and the last notes of
// its timeline, for a test's failure message.
func pendingNote(st task.State) string {
	var b strings.Builder
	if d := st.Pending; d != nil {
		fmt.Fprintf(&b, ", pending %s: %.300q", d.Kind, d.Prompt)
	}
	tl := st.Timeline
	for _, e := range tl[max(0, len(tl)-4):] {
		fmt.Fprintf(&b, "; %s %.200q", e.Status, e.Note)
	}
	return b.String()
}

// done waits until the task is done and its workflow has closed: the
// status says done before the last SSOT records are written, the
// workflow closes after.
func (c *apiClient) done(id string, within time.Duration) task.State {
	c.t.Helper()
	c.waitFor(id, "done", within, func(st task.State) bool { return st.Status == task.StatusDone })
	eventually(c.t, within, id+" closed", func() (bool, error) {
		var list httpapi.ListResponse
		code, resp, err := c.raw("GET", "/v1/tasks?status=done&limit=1000", nil)
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("%d %s %v", code, resp, err)
		}
		if err := json.Unmarshal(resp, &list); err != nil {
			return false, err
		}
		for _, s := range list.Tasks {
			if s.TaskID == id {
				return !s.Running, nil
			}
		}
		return false, nil
	})
	return c.state(id)
}

// awaitResult waits within for the task to be past the executor's turn.
func (c *apiClient) awaitResult(id string, within time.Duration) task.State {
	c.t.Helper()
	return c.waitFor(id, "the executor's result", within, func(st task.State) bool {
		return st.Underlying() != task.StatusDispatched && st.Underlying() != task.StatusInProgress
	})
}

// pending waits within for an open decision of kind and returns it.
func (c *apiClient) pending(id string, kind decision.Kind, within time.Duration) decision.Decision {
	c.t.Helper()
	st := c.waitFor(id, "decision "+string(kind), within, func(st task.State) bool {
		return st.Pending != nil && st.Pending.Kind == kind
	})
	return *st.Pending
}

// decide answers d with option and the digest d was read with.
func (c *apiClient) decide(d decision.Decision, option string) {
	c.t.Helper()
	body := httpapi.DecideRequest{Option: option, Digest: d.Digest}
	if code, resp := c.call("POST", "/v1/decisions/"+d.ID, body, nil); code != http.StatusOK {
		c.t.Fatalf("deciding %s: %d %s", d.ID, code, resp)
	}
}

// outboxMsg waits until the task's outbox holds a message of typ.
func (c *apiClient) outboxMsg(id string, typ amp.Type) amp.Message {
	c.t.Helper()
	var got amp.Message
	c.waitFor(id, string(typ)+" in the outbox", 120*time.Second, func(st task.State) bool {
		for _, m := range st.Outbox {
			if m.Type == typ {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// toolCalls lists the tool calls of the task.
func (c *apiClient) toolCalls(id string) []task.ToolCall {
	c.t.Helper()
	var l task.ToolCallList
	if code, b := c.call("GET", "/v1/tasks/"+id+"/tool-calls", nil, &l); code != http.StatusOK {
		c.t.Fatalf("listing the tool calls of %s: %d %s", id, code, b)
	}
	return l.ToolCalls
}
