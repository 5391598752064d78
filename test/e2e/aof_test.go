package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
)

// aofClient plays AOF agents and a coordinator against the API.
type aofClient struct {
	*faultAPI
}

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

// on returns the client reporting to t, a subtest's.
func (c aofClient) on(t *testing.T) aofClient {
	return aofClient{&faultAPI{t: t, base: c.base, hc: c.hc}}
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

func (c aofClient) create(id string, fields map[string]any) aofTaskView {
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

func (c aofClient) dispatch(id string, ttlMs int) {
	c.t.Helper()
	body := map[string]any{"agentId": "swe-backend", "ttlMs": ttlMs}
	if code, resp := c.call("POST", "/v1/aof/tasks/"+id+"/dispatch", body, nil); code != http.StatusOK {
		c.t.Fatalf("dispatching %s: %d %s", id, code, resp)
	}
}

// send posts a message and returns the status and the error code or
// the result.
func (c aofClient) send(body []byte) (int, map[string]any) {
	c.t.Helper()
	code, resp := c.call("POST", "/v1/aof/messages", body, nil)
	var out map[string]any
	_ = json.Unmarshal(resp, &out)
	return code, out
}

func (c aofClient) must(body []byte) map[string]any {
	c.t.Helper()
	code, out := c.send(body)
	if code != http.StatusOK {
		c.t.Fatalf("message answered %d %v", code, out)
	}
	return out
}

func (c aofClient) task(id string) aofTaskView {
	c.t.Helper()
	var v aofTaskView
	if code, resp := c.call("GET", "/v1/aof/tasks/"+id, nil, &v); code != http.StatusOK {
		c.t.Fatalf("reading %s: %d %s", id, code, resp)
	}
	return v
}

func (c aofClient) events(id string) []aofEvent {
	c.t.Helper()
	var page struct {
		Events []aofEvent `json:"events"`
	}
	if code, resp := c.call("GET", "/v1/aof/events?limit=1000&taskId="+id, nil, &page); code != http.StatusOK {
		c.t.Fatalf("events of %s: %d %s", id, code, resp)
	}
	return page.Events
}

// lastEvent returns the last logged event of typ of a task.
func (c aofClient) lastEvent(id, typ string) aofEvent {
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

func (c aofClient) countEvents(id, typ string) int {
	n := 0
	for _, e := range c.events(id) {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func (c aofClient) waitStatus(id, status string, within time.Duration) aofTaskView {
	c.t.Helper()
	var v aofTaskView
	eventually(c.t, within, id+" "+status, func() (bool, error) {
		v = c.task(id)
		return v.Status == status, nil
	})
	return v
}

func (c aofClient) sessionEnd() {
	c.t.Helper()
	if code, resp := c.call("POST", "/v1/aof/session-end", map[string]any{}, nil); code != http.StatusOK {
		c.t.Fatalf("session end: %d %s", code, resp)
	}
}

func (c aofClient) artifact(id, name string, v any) {
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

// TestAOFExamples runs the AOF/1 document's examples 1–9 against
// `ampflow dev`, asserting each one's status, artifacts and logged events.
func TestAOFExamples(t *testing.T) {
	dataDir := t.TempDir()
	mirror := filepath.Join(dataDir, "aof")
	p := startDev(t, dataDir, "AMPFLOW_AOF_DATA_DIR="+mirror)
	c := aofClient{newFaultAPI(t, p)}
	const (
		t57, t58, t59, t60 = "TASK-2026-02-09-057", "TASK-2026-02-09-058", "TASK-2026-02-09-059", "TASK-2026-02-09-060"
		t61, t62, t63, t64 = "TASK-2026-02-09-061", "TASK-2026-02-09-062", "TASK-2026-02-09-063", "TASK-2026-02-09-064"
	)

	t.Run("Example1CompletionDone", func(t *testing.T) {
		c := c.on(t)
		c.create(t57, nil)
		c.dispatch(t57, 600000)
		out := c.must(aofExample(t, "1", nil))
		if out["changed"] != true {
			t.Errorf("report: %v", out)
		}
		var rr struct {
			Outcome string `json:"outcome"`
			AgentID string `json:"agentId"`
			Tests   struct{ Total, Passed int }
		}
		c.artifact(t57, "run_result.json", &rr)
		if rr.Outcome != "done" || rr.AgentID != "swe-backend" || rr.Tests.Total != 120 {
			t.Errorf("run_result.json %+v", rr)
		}
		if st := c.task(t57).Status; st != "in_progress" {
			t.Errorf("status %s before session_end", st)
		}
		c.lastEvent(t57, "protocol.message.received")
		c.lastEvent(t57, "task.completed")
		c.sessionEnd()
		v := c.waitStatus(t57, "review", 30*time.Second)
		wantReason(t, c.lastEvent(t57, "task.transitioned"), "session_end_done")
		if v.Review == nil {
			t.Fatal("no review decision")
		}
		var listed struct {
			Decisions []decision.Decision `json:"decisions"`
		}
		c.call("GET", "/v1/decisions", nil, &listed)
		if !slices.ContainsFunc(listed.Decisions, func(d decision.Decision) bool { return d.ID == v.Review.ID }) {
			t.Errorf("the review %s is not listed in GET /v1/decisions: %+v", v.Review.ID, listed)
		}
		c.decide(*v.Review, decision.OptApprove)
		c.waitStatus(t57, "done", 30*time.Second)
		last := c.lastEvent(t57, "task.transitioned")
		if last.Payload["from"] != "review" || !strings.HasPrefix(last.Payload["reason"].(string), "approve by ") {
			t.Errorf("last transition %v", last.Payload)
		}
		c.lastEvent(t57, "review.decided")
		if _, err := os.Stat(filepath.Join(mirror, "runs", t57, "run_result.json")); err != nil {
			t.Errorf("the mirror has no run_result.json: %v", err)
		}
		logs, _ := filepath.Glob(filepath.Join(mirror, "events", "*.jsonl"))
		var all []byte
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			all = append(all, b...)
		}
		if !strings.Contains(string(all), `"type":"task.completed"`) || strings.Count(string(all), `"type":"task.created","timestamp"`) < 1 {
			t.Errorf("the mirror's events/ do not hold the task's events: %s", all)
		}
	})

	t.Run("Example2CompletionBlocked", func(t *testing.T) {
		c := c.on(t)
		c.create(t58, nil)
		c.dispatch(t58, 600000)
		c.must(wrapContent(t, string(aofExample(t, "2", nil))))
		c.lastEvent(t58, "task.completed")
		c.sessionEnd()
		c.waitStatus(t58, "blocked", 30*time.Second)
		wantReason(t, c.lastEvent(t58, "task.transitioned"), "session_end_blocked")
	})

	t.Run("Example3StatusProgress", func(t *testing.T) {
		c := c.on(t)
		c.create(t59, nil)
		c.dispatch(t59, 600000)
		c.must(wrapContent(t, "AOF/1 "+string(aofExample(t, "3", nil))))
		v := c.task(t59)
		want := "- 2026-02-09T21:20:00.000Z Progress: Executed 50/100 test cases | Notes: No issues found so far"
		if v.Status != "in_progress" || !slices.Equal(v.WorkLog, []string{want}) {
			t.Errorf("status %s work log %q", v.Status, v.WorkLog)
		}
		if n := c.countEvents(t59, "task.transitioned"); n != 1 {
			t.Errorf("%d transitions, want the dispatch's only", n)
		}
	})

	t.Run("Example4StatusTransition", func(t *testing.T) {
		c := c.on(t)
		c.create(t60, nil)
		c.dispatch(t60, 600000)
		c.must(aofExample(t, "4", nil))
		c.waitStatus(t60, "blocked", 10*time.Second)
		wantReason(t, c.lastEvent(t60, "task.transitioned"), "Test environment unreachable")
	})

	t.Run("Example5HandoffRequest", func(t *testing.T) {
		c := c.on(t)
		c.create(t61, nil)
		c.must(aofExample(t, "5", nil))
		v := c.task(t61)
		if v.ParentTaskID != t57 || v.Metadata.DelegationDepth != 1 || v.Delegation != "requested" {
			t.Errorf("child %+v", v)
		}
		var hj struct {
			ToAgent            string   `json:"toAgent"`
			AcceptanceCriteria []string `json:"acceptanceCriteria"`
		}
		c.artifact(t61, "inputs/handoff.json", &hj)
		var md string
		c.artifact(t61, "inputs/handoff.md", &md)
		if hj.ToAgent != "swe-qa" || len(hj.AcceptanceCriteria) != 3 || !strings.Contains(md, "## Acceptance Criteria\n\n- All unit tests pass\n") {
			t.Errorf("handoff.json %+v handoff.md %q", hj, md)
		}
		c.lastEvent(t61, "delegation.requested")
		c.must(aofExample(t, "5", nil)) // re-sent: the same artifacts, no second delegation
		if n := c.countEvents(t61, "delegation.requested"); n != 1 {
			t.Errorf("%d delegation.requested", n)
		}
		if _, err := os.Stat(filepath.Join(mirror, "tasks", "ready", t61+".md")); err != nil {
			t.Errorf("the mirror has no task file: %v", err)
		}
		for _, name := range []string{"handoff.json", "handoff.md"} {
			if _, err := os.Stat(filepath.Join(mirror, "tasks", "ready", t61, "inputs", name)); err != nil {
				t.Errorf("the mirror has no tasks/ready/%s/inputs/%s: %v", t61, name, err)
			}
		}
	})

	t.Run("Example6HandoffAccepted", func(t *testing.T) {
		c := c.on(t)
		c.must(aofExample(t, "6", nil))
		c.lastEvent(t61, "delegation.accepted")
		if v := c.task(t61); v.Status != "ready" || v.Delegation != "accepted" {
			t.Errorf("status %s delegation %s", v.Status, v.Delegation)
		}
	})

	t.Run("Example7HandoffRejected", func(t *testing.T) {
		c := c.on(t)
		c.create(t62, nil)
		c.must(aofExample(t, "7", nil))
		c.waitStatus(t62, "blocked", 10*time.Second)
		wantReason(t, c.lastEvent(t62, "task.transitioned"), "Insufficient context: no test plan provided")
		wantReason(t, c.lastEvent(t62, "delegation.rejected"), "Insufficient context: no test plan provided")
	})

	t.Run("Example8StaleWithResult", func(t *testing.T) {
		c := c.on(t)
		c.create(t63, nil)
		c.dispatch(t63, 2000)
		c.must(aofExample(t, "1", map[string]any{"taskId": t63, "payload.outcome": "partial"}))
		c.waitStatus(t63, "review", 30*time.Second)
		wantReason(t, c.lastEvent(t63, "task.transitioned"), "stale_heartbeat_partial")
	})

	t.Run("Example9StaleReclaim", func(t *testing.T) {
		c := c.on(t)
		c.create(t64, nil)
		c.dispatch(t64, 2000)
		c.waitStatus(t64, "ready", 30*time.Second)
		wantReason(t, c.lastEvent(t64, "task.transitioned"), "stale_heartbeat_reclaim")
		var run struct {
			Status string `json:"status"`
		}
		c.artifact(t64, "run.json", &run)
		if run.Status != "expired" {
			t.Errorf("run.json status %q, want expired", run.Status)
		}
	})

	t.Run("CLI", func(t *testing.T) {
		out, stderr, code := cli(t, p, nil, "aof", "task", "show", t61, "-o", "json")
		if code != 0 || !strings.Contains(out, `"delegationDepth":1`) {
			t.Errorf("aof task show: %d %s %s", code, out, stderr)
		}
		out, _, code = cli(t, p, nil, "aof", "task", "artifacts", t61, "inputs/handoff.md")
		if code != 0 || !strings.HasPrefix(out, "# Handoff Request\n") {
			t.Errorf("aof task artifacts: %d %q", code, out)
		}
	})

	aofErrors(t, c)
}

// aofErrors covers the document's error tables: each rejection answers
// with its reason, is logged as the document's event, and changes
// nothing.
func aofErrors(t *testing.T, c aofClient) {
	const (
		t57, t59, t61 = "TASK-2026-02-09-057", "TASK-2026-02-09-059", "TASK-2026-02-09-061"
		t65, t66      = "TASK-2026-02-09-065", "TASK-2026-02-09-066"
	)
	c.create(t65, nil)
	cases := []struct {
		name   string
		body   []byte
		status int
		code   string
		task   string
		event  string
		reason string
	}{
		{"InvalidJSON", []byte(`{"protocol": "aof", `), 400, "invalid_json", "", "protocol.message.rejected", "invalid_json"},
		{"InvalidJSONContent", wrapContent(t, "AOF/1 {oops"), 400, "invalid_json", "", "protocol.message.rejected", "invalid_json"},
		{"InvalidEnvelope", aofExample(t, "3", map[string]any{"version": 2}), 400, "invalid_envelope", t59, "protocol.message.rejected", "invalid_envelope"},
		{"InvalidOutcome", aofExample(t, "1", map[string]any{"payload.outcome": "finished"}), 400, "invalid_envelope", t57, "protocol.message.rejected", "invalid_envelope"},
		{"EmptyStatusUpdate", aofExample(t, "3", map[string]any{"payload.progress": nil, "payload.notes": nil}), 400, "invalid_envelope", t59, "protocol.message.rejected", "invalid_envelope"},
		{"UnknownType", aofExample(t, "3", map[string]any{"type": "task.cancel"}), 400, "unknown_type", t59, "protocol.message.unknown", ""},
		{"TaskNotFound", aofExample(t, "1", map[string]any{"taskId": t66}), 404, "task_not_found", t66, "protocol.message.rejected", "task_not_found"},
		{"HandoffTaskNotFound", aofExample(t, "6", map[string]any{"taskId": t66, "payload.taskId": t66}), 404, "task_not_found", t66, "delegation.rejected", "task_not_found"},
		{"TaskIDMismatch", aofExample(t, "5", map[string]any{"payload.taskId": t66}), 400, "taskId_mismatch", t61, "protocol.message.rejected", "taskId_mismatch"},
		{"ParentNotFound", aofExample(t, "5", map[string]any{"taskId": t65, "payload.taskId": t65, "payload.parentTaskId": t66}), 404, "parent_not_found", t65, "delegation.rejected", "parent_not_found"},
		{"NestedDelegation", aofExample(t, "5", map[string]any{"taskId": t65, "payload.taskId": t65, "payload.parentTaskId": t61}), 409, "nested_delegation", t65, "delegation.rejected", "nested_delegation"},
	}
	for _, tc := range cases {
		t.Run("Error"+tc.name, func(t *testing.T) {
			c := c.on(t)
			var before aofTaskView
			if tc.task != "" && tc.task != t66 {
				before = c.task(tc.task)
			}
			code, out := c.send(tc.body)
			e, _ := out["error"].(map[string]any)
			if code != tc.status || e["code"] != tc.code {
				t.Errorf("answered %d %v, want %d %s", code, out, tc.status, tc.code)
			}
			ev := c.lastEvent(tc.task, tc.event)
			if tc.reason != "" {
				wantReason(t, ev, tc.reason)
			} else if ev.Payload["type"] != "task.cancel" {
				t.Errorf("unknown event payload %v", ev.Payload)
			}
			if tc.task != "" && tc.task != t66 {
				after := c.task(tc.task)
				if after.Status != before.Status || len(after.WorkLog) != len(before.WorkLog) || after.ParentTaskID != before.ParentTaskID {
					t.Errorf("a rejection changed %s: %+v → %+v", tc.task, before, after)
				}
			}
		})
	}
	t.Run("ErrorInvalidTransitionAppendsWorkLog", func(t *testing.T) {
		c := c.on(t)
		code, out := c.send(aofExample(t, "3", map[string]any{"payload.status": "backlog"}))
		if code != 200 || !strings.Contains(out["note"].(string), "not a valid transition") {
			t.Errorf("%d %v", code, out)
		}
		if v := c.task(t59); v.Status != "in_progress" || len(v.WorkLog) != 2 {
			t.Errorf("status %s work log %q", v.Status, v.WorkLog)
		}
	})
	t.Run("ErrorCompletionWhileDone", func(t *testing.T) {
		c := c.on(t)
		n := c.countEvents(t57, "task.completed")
		code, out := c.send(aofExample(t, "1", nil))
		if code != 200 || out["changed"] != false {
			t.Errorf("%d %v", code, out)
		}
		if c.task(t57).Status != "done" || c.countEvents(t57, "task.completed") != n {
			t.Error("a report to a done task changed it")
		}
	})
	t.Run("ErrorDispatchNotReady", func(t *testing.T) {
		c := c.on(t)
		code, resp := c.call("POST", "/v1/aof/tasks/"+t59+"/dispatch", map[string]any{"agentId": "swe-qa"}, nil)
		if code != 409 || !strings.Contains(string(resp), "invalid_transition") {
			t.Errorf("%d %s", code, resp)
		}
		code, resp = c.call("POST", "/v1/aof/tasks/"+t65+"/heartbeat", map[string]any{"agentId": "swe-qa"}, nil)
		if code != 409 || !strings.Contains(string(resp), "not_running") {
			t.Errorf("%d %s", code, resp)
		}
	})
}

// TestAOFKillBeforeSessionEnd kills `ampflow dev` between an agent's
// completion report and the session's end: after the restart the session
// end still applies the reported outcome.
func TestAOFKillBeforeSessionEnd(t *testing.T) {
	dataDir := t.TempDir()
	p := startDev(t, dataDir)
	c := aofClient{newFaultAPI(t, p)}
	const id = "TASK-2026-02-09-070"
	c.create(id, map[string]any{"reviewRequired": false})
	c.dispatch(id, 600000)
	c.must(aofExample(t, "1", map[string]any{"taskId": id}))

	p.kill()
	p.restart()
	c.reset()

	eventually(t, 60*time.Second, "the task answers after the restart", func() (bool, error) {
		code, _, err := c.raw("GET", "/v1/aof/tasks/"+id, nil)
		return code == http.StatusOK, err
	})
	c.sessionEnd()
	c.waitStatus(id, "done", 60*time.Second)
	var trans []string
	for _, e := range c.events(id) {
		if e.Type == "task.transitioned" {
			trans = append(trans, e.Payload["from"].(string)+">"+e.Payload["to"].(string)+":"+e.Payload["reason"].(string))
		}
	}
	want := []string{"ready>in_progress:dispatched to swe-backend", "in_progress>review:session_end_done", "review>done:session_end_done"}
	if !slices.Equal(trans, want) {
		t.Errorf("transitions %v, want %v", trans, want)
	}
	if n := c.countEvents(id, "task.completed"); n != 1 {
		t.Errorf("%d task.completed events, want 1", n)
	}
}
