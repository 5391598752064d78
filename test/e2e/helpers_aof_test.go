package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
)

// aofExample returns example n of the AOF/1 document, edited by edits
// (JSON paths as "payload.outcome" → value).
func aofExample(t *testing.T, n string, edits map[string]any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "integrations", "aof", "testdata", "example"+n+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(edits) == 0 {
		return b
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for path, v := range edits {
		obj := m
		keys := strings.Split(path, ".")
		for _, k := range keys[:len(keys)-1] {
			obj = obj[k].(map[string]any)
		}
		if v == nil {
			delete(obj, keys[len(keys)-1])
		} else {
			obj[keys[len(keys)-1]] = v
		}
	}
	return mustJSON(t, m)
}

func wrapContent(t *testing.T, text string) []byte {
	return mustJSON(t, map[string]string{"content": text})
}

type aofTaskView struct {
	TaskID       string `json:"taskId"`
	Status       string `json:"status"`
	ParentTaskID string `json:"parentTaskId"`
	Metadata     struct {
		DelegationDepth int  `json:"delegationDepth"`
		ReviewRequired  bool `json:"reviewRequired"`
	} `json:"metadata"`
	WorkLog    []string                   `json:"workLog"`
	Delegation string                     `json:"delegation"`
	Review     *decision.Decision         `json:"review"`
	Artifacts  map[string]json.RawMessage `json:"artifacts"`
}

type aofEvent struct {
	Type    string         `json:"type"`
	TaskID  string         `json:"taskId"`
	Actor   string         `json:"actor"`
	Payload map[string]any `json:"payload"`
}

func (c *apiClient) create(id string, fields map[string]any) aofTaskView {
	c.t.Helper()
	body := map[string]any{"taskId": id, "title": "task " + id, "assignee": "swe-backend"}
	for k, v := range fields {
		body[k] = v
	}
	var out aofTaskView
	if code, resp := c.call("POST", "/v1/aof/tasks", body, &out); code != http.StatusCreated {
		c.t.Fatalf("creating %s: %d %s", id, code, resp)
	}
	return out
}

func (c *apiClient) dispatch(id string, ttlMs int) {
	c.t.Helper()
	body := map[string]any{"agentId": "swe-backend", "ttlMs": ttlMs}
	if code, resp := c.call("POST", "/v1/aof/tasks/"+id+"/dispatch", body, nil); code != http.StatusOK {
		c.t.Fatalf("dispatching %s: %d %s", id, code, resp)
	}
}

// send posts a message and returns the status and the error code or
// the result.
func (c *apiClient) send(body []byte) (int, map[string]any) {
	c.t.Helper()
	code, resp := c.call("POST", "/v1/aof/messages", body, nil)
	var out map[string]any
	_ = json.Unmarshal(resp, &out)
	return code, out
}

func (c *apiClient) must(body []byte) map[string]any {
	c.t.Helper()
	code, out := c.send(body)
	if code != http.StatusOK {
		c.t.Fatalf("message answered %d %v", code, out)
	}
	return out
}

func (c *apiClient) task(id string) aofTaskView {
	c.t.Helper()
	var v aofTaskView
	if code, resp := c.call("GET", "/v1/aof/tasks/"+id, nil, &v); code != http.StatusOK {
		c.t.Fatalf("reading %s: %d %s", id, code, resp)
	}
	return v
}

func (c *apiClient) events(id string) []aofEvent {
	c.t.Helper()
	var page struct {
		Events []aofEvent `json:"events"`
	}
	if code, resp := c.call("GET", "/v1/aof/events?limit=1000&task_id="+id, nil, &page); code != http.StatusOK {
		c.t.Fatalf("events of %s: %d %s", id, code, resp)
	}
	return page.Events
}

// lastEvent returns the last logged event of typ of a task.
func (c *apiClient) lastEvent(id, typ string) aofEvent {
	c.t.Helper()
	evs := c.events(id)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			return evs[i]
		}
	}
	c.t.Fatalf("no %s event of %s in %+v", typ, id, evs)
	return aofEvent{}
}

func (c *apiClient) countEvents(id, typ string) int {
	n := 0
	for _, e := range c.events(id) {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func (c *apiClient) waitStatus(id, status string, within time.Duration) aofTaskView {
	c.t.Helper()
	var v aofTaskView
	eventually(c.t, within, id+" "+status, func() (bool, error) {
		v = c.task(id)
		return v.Status == status, nil
	})
	return v
}

// sessionEnd ends the session of swe-backend, the agent every dispatch
// here runs.
func (c *apiClient) sessionEnd() {
	c.t.Helper()
	if code, resp := c.call("POST", "/v1/aof/session-end", map[string]any{"agentId": "swe-backend"}, nil); code != http.StatusOK {
		c.t.Fatalf("session end: %d %s", code, resp)
	}
}

func (c *apiClient) artifact(id, name string, v any) {
	c.t.Helper()
	raw, ok := c.task(id).Artifacts[name]
	if !ok {
		c.t.Fatalf("%s has no %s", id, name)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		c.t.Fatalf("%s of %s: %v", name, id, err)
	}
}

func wantReason(t *testing.T, e aofEvent, reason string) {
	t.Helper()
	if e.Payload["reason"] != reason {
		t.Errorf("%s of %s has reason %v, want %q", e.Type, e.TaskID, e.Payload["reason"], reason)
	}
}

// leaseState returns the state of the lease of key held by agent, "" when
// none is listed.
func (c *apiClient) leaseState(key, agent string) string {
	c.t.Helper()
	var page struct {
		Leases []struct {
			ResourceKey string `json:"resource_key"`
			State       string `json:"state"`
		} `json:"leases"`
	}
	if code, resp := c.call("GET", "/v1/leases?limit=1000&agent_id="+agent, nil, &page); code != http.StatusOK {
		c.t.Fatalf("leases of %s: %d %s", agent, code, resp)
	}
	state := ""
	for _, l := range page.Leases {
		if l.ResourceKey == key {
			state = l.State
		}
	}
	return state
}

// waitLease waits for the lease of key to reach state.
func (c *apiClient) waitLease(key, agent, state string) {
	c.t.Helper()
	eventually(c.t, 30*time.Second, "lease "+key+" "+state, func() (bool, error) {
		return c.leaseState(key, agent) == state, nil
	})
}

// runResult reads a task's run_result.json.
func (c *apiClient) runResult(id string) aofRunResult {
	c.t.Helper()
	var rr aofRunResult
	c.artifact(id, "run_result.json", &rr)
	return rr
}

type aofRunResult struct {
	TaskID   string   `json:"taskId"`
	AgentID  string   `json:"agentId"`
	Outcome  string   `json:"outcome"`
	Blockers []string `json:"blockers"`
	Notes    string   `json:"notes"`
	Tests    struct {
		Total, Passed, Failed int
	} `json:"tests"`
}
