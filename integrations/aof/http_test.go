package aof

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/httpapi/httpapitest"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// fakeTasks stands for the task workflows: it saves what it is given as
// the workflow would, so the routes read it back.
type fakeTasks struct {
	store *ssot.DB
	msgs  []wf.MessageInput
	err   error

	dispatches []wf.DispatchInput
	beats      []wf.HeartbeatInput
}

func (f *fakeTasks) save(t wf.Task) {
	t.Rev++
	b, _ := json.Marshal(t)
	_ = f.store.SaveAOF(context.Background(), ssot.AOFSave{Task: &ssot.AOFTask{TaskID: t.TaskID, Status: string(t.Status), Rev: t.Rev, Body: b}})
}

func (f *fakeTasks) Create(_ context.Context, t wf.Task) (wf.Task, error) {
	f.save(t)
	return t, nil
}

func (f *fakeTasks) Message(_ context.Context, in wf.MessageInput) (wf.Result, error) {
	f.msgs = append(f.msgs, in)
	return wf.Result{Changed: true}, f.err
}

func (f *fakeTasks) Dispatch(_ context.Context, _ string, in wf.DispatchInput) (wf.Result, error) {
	f.dispatches = append(f.dispatches, in)
	return wf.Result{}, f.err
}

func (f *fakeTasks) Heartbeat(_ context.Context, _ string, in wf.HeartbeatInput) (wf.Result, error) {
	f.beats = append(f.beats, in)
	return wf.Result{}, f.err
}

func (f *fakeTasks) SessionEnd(context.Context, string, wf.SessionEndInput) (wf.Result, error) {
	return wf.Result{}, f.err
}

// recLog stands for the mirroring event log: it counts what it is given
// and saves it.
type recLog struct {
	store *ssot.DB
	types []string
}

func (l *recLog) SaveAOF(ctx context.Context, in ssot.AOFSave) error {
	for _, e := range in.Events {
		l.types = append(l.types, e.Type)
	}
	return l.store.SaveAOF(ctx, in)
}

type rig struct {
	api   *API
	evlog *recLog
	t     *testing.T
	url   string
	store *ssot.DB
	tasks *fakeTasks
}

func newRig(t *testing.T, tokens ...config.AuthToken) *rig {
	store, _ := httpapitest.Store(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httpapi.New(httpapi.Options{Store: store, Logger: log, Tokens: tokens, PollInterval: 10 * time.Millisecond})
	tasks := &fakeTasks{store: store}
	evlog := &recLog{store: store}
	a := Register(srv, Options{Tasks: tasks, Store: store, Events: evlog, Logger: log})
	a.now = func() time.Time { return time.Date(2026, 2, 9, 21, 0, 0, 0, time.UTC) }
	return &rig{t: t, url: httpapitest.Serve(t, srv), store: store, tasks: tasks, evlog: evlog, api: a}
}

func (r *rig) do(method, path, body string) (int, map[string]any) {
	r.t.Helper()
	return r.as("", method, path, body)
}

// as sends a request with a bearer token, when not empty.
func (r *rig) as(token, method, path, body string) (int, map[string]any) {
	r.t.Helper()
	resp := httpapitest.Do(r.t, method, r.url+path, token, body)
	var out map[string]any
	_ = json.Unmarshal(resp.Body, &out)
	return resp.Status, out
}

func errCode(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// lastEvents returns the types and reasons of the logged events.
func (r *rig) events() []string {
	evs, _, err := r.store.AOFEvents(context.Background(), "", ssot.Page{})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		var p map[string]any
		_ = json.Unmarshal(e.Payload, &p)
		s := e.Type
		if reason, ok := p["reason"].(string); ok {
			s += ":" + reason
		}
		if typ, ok := p["type"].(string); ok && e.Type == wf.EventUnknown {
			s += ":" + typ
		}
		out = append(out, s)
	}
	return out
}

func TestMessageRejections(t *testing.T) {
	ex1 := example(t, 1)
	cases := []struct {
		name, body string
		status     int
		code       string
		events     []string
	}{
		{"InvalidJSON", `{"protocol":`, 400, "invalid_json", []string{"protocol.message.rejected:invalid_json"}},
		{"InvalidEnvelope", strings.Replace(ex1, `"version": 1`, `"version": 2`, 1), 400, "invalid_envelope", []string{"protocol.message.rejected:invalid_envelope"}},
		{"Unknown", strings.Replace(ex1, `"completion.report"`, `"task.cancel"`, 1), 400, "unknown_type", []string{"protocol.message.unknown:task.cancel"}},
		{"Mismatch", strings.Replace(example(t, 3), `"taskId": "TASK-2026-02-09-059", "agentId"`, `"taskId": "TASK-2026-02-09-001", "agentId"`, 1), 400, "taskId_mismatch", []string{"protocol.message.rejected:taskId_mismatch"}},
		{"TaskNotFound", ex1, 404, "task_not_found", []string{"protocol.message.received", "protocol.message.rejected:task_not_found"}},
		{"HandoffTaskNotFound", example(t, 6), 404, "task_not_found", []string{"protocol.message.received", "protocol.message.rejected:task_not_found", "delegation.rejected:task_not_found"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			st, out := r.do("POST", "/v1/aof/messages", c.body)
			if st != c.status || errCode(out) != c.code {
				t.Errorf("%d %v, want %d %s", st, out, c.status, c.code)
			}
			if got := r.events(); strings.Join(got, ",") != strings.Join(c.events, ",") {
				t.Errorf("events %v, want %v", got, c.events)
			}
			if len(r.evlog.types) != len(c.events) {
				t.Errorf("%d events went through the (mirroring) event log %v, want all %d", len(r.evlog.types), r.evlog.types, len(c.events))
			}
			if len(r.tasks.msgs) != 0 {
				t.Error("a rejected message reached a task")
			}
		})
	}
}

func TestMessageHandoff(t *testing.T) {
	r := newRig(t)
	if st, out := r.do("POST", "/v1/aof/tasks", `{"taskId":"TASK-2026-02-09-061","title":"QA"}`); st != 201 {
		t.Fatalf("create: %d %v", st, out)
	}
	st, out := r.do("POST", "/v1/aof/messages", content(Prefix+example(t, 5)))
	if st != 404 || errCode(out) != "parent_not_found" {
		t.Errorf("no parent: %d %v", st, out)
	}
	if got := r.events(); got[len(got)-1] != "delegation.rejected:parent_not_found" {
		t.Errorf("events %v", got)
	}
	r.do("POST", "/v1/aof/tasks", `{"taskId":"TASK-2026-02-09-057","title":"API","assignee":"swe-backend"}`)
	if st, out := r.do("POST", "/v1/aof/messages", example(t, 5)); st != 200 {
		t.Fatalf("handoff: %d %v", st, out)
	}
	// The task is told who hands it off: the parent's owners.
	if len(r.tasks.msgs) != 1 || r.tasks.msgs[0].ParentDepth != 0 || r.tasks.msgs[0].Message.Handoff == nil ||
		fmt.Sprint(r.tasks.msgs[0].ParentOwners) != "[swe-backend]" {
		t.Errorf("handed %+v", r.tasks.msgs)
	}
	r.tasks.err = task.Errorf(task.CodeForbidden, "not yours")
	if st, out := r.do("POST", "/v1/aof/messages", example(t, 5)); st != 403 || errCode(out) != "forbidden" {
		t.Errorf("not the owner: %d %v", st, out)
	}
	if got := r.events(); got[len(got)-1] != "protocol.message.rejected:forbidden" {
		t.Errorf("events %v", got)
	}
	r.tasks.err = task.Errorf(wf.CodeNestedDelegation, "nested")
	if st, out := r.do("POST", "/v1/aof/messages", example(t, 5)); st != 409 || errCode(out) != "nested_delegation" {
		t.Errorf("nested: %d %v", st, out)
	}
	if got := r.events(); got[len(got)-1] != "delegation.rejected:nested_delegation" {
		t.Errorf("events %v", got)
	}
	r.tasks.err = task.Errorf(wf.CodeParentConflict, "linked")
	if st, out := r.do("POST", "/v1/aof/messages", example(t, 5)); st != 409 || errCode(out) != "parent_conflict" {
		t.Errorf("re-parenting: %d %v", st, out)
	}
	if got := r.events(); got[len(got)-1] != "delegation.rejected:parent_conflict" {
		t.Errorf("events %v", got)
	}
	r.tasks.err = nil
	n := len(r.tasks.msgs)
	self := strings.Replace(example(t, 5), `"parentTaskId": "TASK-2026-02-09-057"`, `"parentTaskId": "TASK-2026-02-09-061"`, 1)
	if st, out := r.do("POST", "/v1/aof/messages", self); st != 400 || errCode(out) != "invalid_envelope" || !strings.Contains(fmt.Sprint(out), "payload.parentTaskId") {
		t.Errorf("self-parent: %d %v", st, out)
	}
	if got := r.events(); got[len(got)-1] != "protocol.message.rejected:invalid_envelope" || len(r.tasks.msgs) != n {
		t.Errorf("self-parent: events %v, %d messages handed", got, len(r.tasks.msgs)-n)
	}
}

// TestCreateNestedLogged: a task created under a delegated parent is
// refused and logged as delegation.rejected (nested_delegation).
func TestCreateNestedLogged(t *testing.T) {
	r := newRig(t)
	r.do("POST", "/v1/aof/tasks", `{"taskId":"TASK-2026-02-09-001","title":"top"}`)
	r.do("POST", "/v1/aof/tasks", `{"taskId":"TASK-2026-02-09-002","title":"child","parentTaskId":"TASK-2026-02-09-001"}`)
	st, out := r.do("POST", "/v1/aof/tasks", `{"taskId":"TASK-2026-02-09-003","title":"grandchild","parentTaskId":"TASK-2026-02-09-002"}`)
	if st != 409 || errCode(out) != "nested_delegation" {
		t.Fatalf("%d %v", st, out)
	}
	evs, _, err := r.store.AOFEvents(context.Background(), "TASK-2026-02-09-003", ssot.Page{})
	if err != nil || len(evs) != 1 || evs[0].Type != wf.EventDelegationRejected || !strings.Contains(string(evs[0].Payload), `"reason":"nested_delegation"`) {
		t.Errorf("events %+v %v", evs, err)
	}
}

func TestCreateTask(t *testing.T) {
	r := newRig(t)
	for _, want := range []string{"TASK-2026-02-09-001", "TASK-2026-02-09-002"} {
		st, out := r.do("POST", "/v1/aof/tasks", `{"title":"t"}`)
		if st != 201 || out["taskId"] != want || out["status"] != "ready" {
			t.Errorf("%d %v, want %s", st, out, want)
		}
		md := out["metadata"].(map[string]any)
		if md["reviewRequired"] != true {
			t.Errorf("metadata %v", md)
		}
	}
	for body, code := range map[string]string{
		`{"title":"t","taskId":"TASK-2026-02-09-001"}`: "conflict",
		`{"title":""}`:                                                  "invalid",
		`{"title":"t","status":"done"}`:                                 "invalid",
		`{"title":"t","taskId":"T-1"}`:                                  "invalid",
		`{"title":"t","parentTaskId":"TASK-2026-02-09-777"}`:            "parent_not_found",
		`{"title":"t","nope":1}`:                                        "invalid",
		`{"title":"` + strings.Repeat("t", MaxText+1) + `"}`:            "invalid",
		`{"title":"t","body":"` + strings.Repeat("b", MaxBody+1) + `"}`: "invalid",
	} {
		if st, out := r.do("POST", "/v1/aof/tasks", body); errCode(out) != code || st < 400 {
			t.Errorf("%s: %d %v, want %s", body, st, out, code)
		}
	}
	st, out := r.do("POST", "/v1/aof/tasks", `{"title":"child","parentTaskId":"TASK-2026-02-09-001","reviewRequired":false}`)
	if st != 201 || out["metadata"].(map[string]any)["delegationDepth"] != 1.0 {
		t.Errorf("child %d %v", st, out)
	}
	if st, out := r.do("POST", "/v1/aof/tasks", `{"title":"grandchild","parentTaskId":"`+out["taskId"].(string)+`"}`); st != 409 || errCode(out) != "nested_delegation" {
		t.Errorf("grandchild %d %v", st, out)
	}
	if st, out := r.do("GET", "/v1/aof/tasks/TASK-2026-02-09-001", ""); st != 200 || out["artifacts"] == nil {
		t.Errorf("get %d %v", st, out)
	}
	if st, out := r.do("GET", "/v1/aof/tasks/TASK-2026-02-09-999", ""); st != 404 || errCode(out) != "task_not_found" {
		t.Errorf("get missing %d %v", st, out)
	}
	r.tasks.err = task.Errorf(wf.CodeInvalidTransition, "not ready")
	if st, out := r.do("POST", "/v1/aof/tasks/TASK-2026-02-09-001/dispatch", `{"agentId":"a"}`); st != 409 || errCode(out) != "invalid_transition" {
		t.Errorf("dispatch %d %v", st, out)
	}
	r.tasks.err = task.Errorf(wf.CodeNotRunning, "no run")
	if st, out := r.do("POST", "/v1/aof/tasks/TASK-2026-02-09-001/heartbeat", `{"agentId":"a"}`); st != 409 || errCode(out) != "not_running" {
		t.Errorf("heartbeat %d %v", st, out)
	}
	if st, out := r.do("GET", "/v1/aof/events?task_id=TASK-2026-02-09-001", ""); st != 200 || out["events"] == nil {
		t.Errorf("events %d %v", st, out)
	}
	if st, out := r.do("POST", "/v1/aof/session-end", `{"agentId":"swe-backend"}`); st != 200 || out["applied"] == nil {
		t.Errorf("session end %d %v", st, out)
	}
}

// TestSessionEndOpenNeedsAgent: with no tokens every caller is the same
// admin, so a session end must name its agent rather than end every
// agent's runs.
func TestSessionEndOpenNeedsAgent(t *testing.T) {
	r := newRig(t)
	st, out := r.do("POST", "/v1/aof/session-end", `{}`)
	if st != http.StatusBadRequest || errCode(out) != "invalid" || !strings.Contains(fmt.Sprint(out), "agentId") {
		t.Errorf("session end without agentId: %d %v", st, out)
	}
}

func TestDocumented(t *testing.T) {
	r := newRig(t)
	st, doc := r.do("GET", "/v1/openapi.json", "")
	if st != 200 {
		t.Fatal(st)
	}
	paths := doc["paths"].(map[string]any)
	for _, p := range []string{"/v1/aof/messages", "/v1/aof/tasks", "/v1/aof/tasks/{id}", "/v1/aof/tasks/{id}/dispatch",
		"/v1/aof/tasks/{id}/heartbeat", "/v1/aof/events", "/v1/aof/session-end"} {
		if paths[p] == nil {
			t.Errorf("%s is not documented", p)
		}
	}
}

// TestRoles: coordinators and admins create and dispatch, and may act
// for any agent; an executor's or reviewer's token sends messages,
// heartbeats and session ends only as itself; any token reads.
func TestRoles(t *testing.T) {
	r := newRig(t,
		config.AuthToken{Token: "coord", Role: amp.RoleCoordinator, Name: "planner"},
		config.AuthToken{Token: "exec", Role: amp.RoleExecutor, Name: "swe-backend"},
		config.AuthToken{Token: "qa", Role: amp.RoleReviewer, Name: "swe-qa"})
	const id = "TASK-2026-02-09-057"
	if st, out := r.as("exec", "POST", "/v1/aof/tasks", `{"title":"t"}`); st != http.StatusForbidden {
		t.Errorf("an executor created a task: %d %v", st, out)
	}
	if st, out := r.as("coord", "POST", "/v1/aof/tasks", `{"title":"t","taskId":"`+id+`"}`); st != http.StatusCreated {
		t.Fatalf("a coordinator could not create a task: %d %v", st, out)
	}
	if st, out := r.as("coord", "POST", "/v1/aof/tasks", `{"title":"qa","taskId":"TASK-2026-02-09-059"}`); st != http.StatusCreated {
		t.Fatalf("a coordinator could not create a task: %d %v", st, out)
	}
	if st, _ := r.as("exec", "POST", "/v1/aof/tasks/"+id+"/dispatch", `{"agentId":"a"}`); st != http.StatusForbidden {
		t.Errorf("an executor dispatched: %d", st)
	}
	if st, out := r.as("exec", "POST", "/v1/aof/messages", example(t, 1)); st != http.StatusOK {
		t.Errorf("an executor could not report as itself: %d %v", st, out)
	}
	// The task holds the agent to what is its own (wf.Authorize).
	if n := len(r.tasks.msgs); n == 0 || r.tasks.msgs[n-1].Agent != "swe-backend" {
		t.Errorf("the task was not told the agent: %+v", r.tasks.msgs)
	}
	if st, _ := r.as("exec", "GET", "/v1/aof/tasks/"+id, ""); st != http.StatusOK {
		t.Errorf("an executor could not read: %d", st)
	}
	if st, _ := r.as("", "POST", "/v1/aof/messages", example(t, 1)); st != http.StatusUnauthorized {
		t.Errorf("a message without a token: %d", st)
	}
	// Each names another agent than the token's: refused 403, naming the
	// field, and nothing reaches the task.
	before := len(r.tasks.msgs)
	statusAs := strings.Replace(example(t, 3), `"agentId": "swe-qa"`, `"agentId": "swe-backend"`, 1)
	for _, c := range []struct {
		name, token, path, body, field string
	}{
		{"ReportAsAnother", "qa", "/v1/aof/messages", example(t, 1), "fromAgent"},
		{"ContentAsAnother", "qa", "/v1/aof/messages", content("AOF/1 " + example(t, 1)), "fromAgent"},
		{"StatusAgentIDAsAnother", "qa", "/v1/aof/messages", statusAs, "payload.agentId"},
		{"HeartbeatAsAnother", "qa", "/v1/aof/tasks/" + id + "/heartbeat", `{"agentId":"swe-backend"}`, "agentId"},
		{"SessionEndAsAnother", "qa", "/v1/aof/session-end", `{"agentId":"swe-backend"}`, "agentId"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.field == "payload.agentId" && !strings.Contains(c.body, `"agentId": "swe-backend"`) {
				t.Fatal("example 3 no longer names agentId as the edit expects")
			}
			st, out := r.as(c.token, "POST", c.path, c.body)
			e, _ := out["error"].(map[string]any)
			if st != http.StatusForbidden || !strings.HasPrefix(e["message"].(string), c.field+":") {
				t.Errorf("%d %v", st, out)
			}
		})
	}
	if n := len(r.tasks.msgs); n != before {
		t.Errorf("%d refused messages reached the task", n-before)
	}
	t.Run("CoordinatorForAnother", func(t *testing.T) {
		if st, out := r.as("coord", "POST", "/v1/aof/messages", example(t, 3)); st != http.StatusOK {
			t.Errorf("a coordinator could not speak for swe-qa: %d %v", st, out)
		}
		if n := len(r.tasks.msgs); r.tasks.msgs[n-1].Agent != "" {
			t.Errorf("a coordinator's message was held to an agent's: %+v", r.tasks.msgs[n-1])
		}
		if st, out := r.as("coord", "POST", "/v1/aof/session-end", `{}`); st != http.StatusOK {
			t.Errorf("a coordinator could not end every session: %d %v", st, out)
		}
	})
	t.Run("ReviewerAsItself", func(t *testing.T) {
		if st, out := r.as("qa", "POST", "/v1/aof/messages", example(t, 3)); st != http.StatusOK {
			t.Errorf("%d %v", st, out)
		}
	})
}

// TestCompletionMissingFiles: with aof.data_dir set, a completion whose
// summaryRef or handoffRef names no file is taken with a warning for
// each, logged with its receipt and handed to the task.
func TestCompletionMissingFiles(t *testing.T) {
	r := newRig(t)
	dir := t.TempDir()
	r.api.dataDir = dir
	const id = "TASK-2026-02-09-057"
	r.do("POST", "/v1/aof/tasks", `{"taskId":"`+id+`","title":"API"}`)
	withHandoff := strings.Replace(example(t, 1), `"summaryRef": "outputs/summary.md"`, `"summaryRef": "outputs/summary.md", "handoffRef": "../../etc/passwd"`, 1)
	if !strings.Contains(withHandoff, "handoffRef") {
		t.Fatal("example 1 no longer has the summaryRef the edit expects")
	}
	if st, out := r.do("POST", "/v1/aof/messages", withHandoff); st != 200 {
		t.Fatalf("%d %v", st, out)
	}
	w := r.tasks.msgs[0].Message.Warnings
	if len(w) != 2 || !strings.HasPrefix(w[0], "payload.summaryRef: ") || !strings.HasPrefix(w[1], "payload.handoffRef: ") {
		t.Errorf("warnings %q", w)
	}
	evs, _, _ := r.store.AOFEvents(context.Background(), id, ssot.Page{})
	if last := evs[len(evs)-1]; last.Type != wf.EventReceived || !strings.Contains(string(last.Payload), `"warnings":["payload.summaryRef`) {
		t.Errorf("receipt %s %s", last.Type, last.Payload)
	}
	p := filepath.Join(dir, "tasks", "in-progress", id, "outputs", "summary.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("# Summary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.do("POST", "/v1/aof/messages", example(t, 1))
	if w := r.tasks.msgs[1].Message.Warnings; len(w) != 0 {
		t.Errorf("warnings with the summary present: %q", w)
	}
}

// countingTasks counts the session-end updates the route sends.
type countingTasks struct {
	*fakeTasks
	ended []string
}

func (c *countingTasks) SessionEnd(_ context.Context, id string, _ wf.SessionEndInput) (wf.Result, error) {
	c.ended = append(c.ended, id)
	return wf.Result{Changed: true}, nil
}

// TestSessionEndBounded: a session end updates only the tasks with a run
// result of that agent to apply, at most MaxSessionEnd a call.
func TestSessionEndBounded(t *testing.T) {
	// Ending every agent's runs takes a coordinator's (or admin's) token.
	const coord = "coordinator-token-0001"
	r := newRig(t, config.AuthToken{Token: coord, Role: amp.RoleCoordinator, Name: "planner"})
	ct := &countingTasks{fakeTasks: r.tasks}
	r.api.tasks = ct
	for i := range 2*MaxSessionEnd + 20 {
		tk := wf.Task{TaskID: fmt.Sprintf("TASK-2026-02-09-%03d", i+1), Status: wf.StatusInProgress}
		if i%2 == 0 {
			tk.Result = &wf.RunResult{TaskID: tk.TaskID, AgentID: "a"}
		}
		r.tasks.save(tk)
	}
	r.tasks.save(wf.Task{TaskID: "TASK-2026-02-09-900", Status: wf.StatusInProgress, Result: &wf.RunResult{AgentID: "b"}})

	st, out := r.as(coord, "POST", "/v1/aof/session-end", `{"agentId":"b"}`)
	if st != 200 || len(ct.ended) != 1 || ct.ended[0] != "TASK-2026-02-09-900" {
		t.Fatalf("session end of b: %d %v updated %v, want only b's task", st, out, ct.ended)
	}
	ct.ended = nil
	st, out = r.as(coord, "POST", "/v1/aof/session-end", `{}`)
	if st != 200 || len(ct.ended) != MaxSessionEnd || out["more"] != true {
		t.Fatalf("session end of all: %d more=%v updated %d tasks, want %d and more", st, out["more"], len(ct.ended), MaxSessionEnd)
	}
	for _, id := range ct.ended {
		var n int
		fmt.Sscanf(id, "TASK-2026-02-09-%d", &n)
		if n != 900 && n%2 == 0 {
			t.Errorf("%s, with no run result, was sent an update", id)
		}
	}
}
