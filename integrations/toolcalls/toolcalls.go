// Package toolcalls is the HTTP face of the tool policy: POST
// /v1/tool-calls decides an agent CLI's tool call before it runs (allow
// and deny at once, ask through the task's tool_call decision, waited for
// or polled at GET /v1/tool-calls/{id}), and GET /v1/tasks/{id}/tool-calls
// lists a task's tool calls from its chain.
package toolcalls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config/toolpolicy"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// Tasks records a tool call in its task (workflows.Client).
type Tasks interface {
	ToolCall(ctx context.Context, taskID string, in task.ToolCall) (task.ToolCall, error)
}

// Records reads the task's chain, where every tool call is recorded.
type Records interface {
	Get(ctx context.Context, id string) (ssot.Record, error)
	History(ctx context.Context, taskID string, p ssot.Page) ([]ssot.Record, string, error)
}

// Options configure the tool-call routes.
type Options struct {
	Tasks  Tasks
	Store  Records
	Policy *toolpolicy.Policy
	// AskTimeout is how long a CLI waits for the admins to answer an ask
	// (tools.ask_timeout); ParkTimeout how long the ask stays open after
	// that before it is denied (tools.park_timeout).
	AskTimeout  time.Duration
	ParkTimeout time.Duration
	// Poll is how often a long poll looks again; zero is 300ms.
	Poll time.Duration
	// Parks, when set, lets the hook route park a run's call still asked
	// at AskTimeout: the API shares data_dir with the worker running it.
	Parks Parks
	// Repos, when set, finds the destinations the admins allowed for a
	// task's whole repository (repo_answers.go).
	Repos RepoAnswers
}

// Handlers serve the tool-call routes. Build them with Register.
type Handlers struct {
	api *httpapi.Server
	o   Options
}

// Register adds the routes, their schemas and the tool_call decision kind
// to the API.
func Register(api *httpapi.Server, o Options) *Handlers {
	if o.Poll <= 0 {
		o.Poll = 300 * time.Millisecond
	}
	h := &Handlers{api: api, o: o}
	api.Add(httpapi.Spec{Schemas: schemas(), DecisionKinds: []decision.Kind{task.KindToolCall}},
		httpapi.Route{Pattern: "POST /v1/tool-calls", Handler: h.post, Operation: postOp()},
		httpapi.Route{Pattern: "GET /v1/tool-calls/{id}", Handler: h.get, Operation: getOp()},
		httpapi.Route{Pattern: "GET /v1/tasks/{id}/tool-calls", Handler: h.list, Operation: listOp()},
		httpapi.Route{Pattern: HookPattern, Handler: h.hook, Operation: hookOp()},
	)
	return h
}

// post decides a tool call: the policy first, then the task, which
// records it and raises an ask.
func (h *Handlers) post(w http.ResponseWriter, r *http.Request) {
	wait, _, err := h.api.LongPoll(w, r)
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	var in task.ToolCallRequest
	if err := h.api.Decode(w, r, &in); err != nil {
		h.api.Error(w, r, err)
		return
	}
	out, err := h.record(r, in)
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	if out.Decision == task.ToolPending && wait > 0 {
		out = h.await(r.Context(), out, wait)
	}
	h.answer(w, out)
}

// record checks the call, puts it through the policy and records it in
// its task, which raises an ask where the policy says so.
func (h *Handlers) record(r *http.Request, in task.ToolCallRequest) (task.ToolCall, error) {
	switch {
	case !task.ValidID(in.TaskID):
		return task.ToolCall{}, httpapi.InvalidField("task_id", fmt.Sprintf("must be a task id T-YYYY-NNN, not %q", in.TaskID))
	case strings.TrimSpace(in.Tool) == "":
		return task.ToolCall{}, httpapi.InvalidField("tool", "required")
	case len(in.Input) > 0 && !json.Valid(in.Input):
		return task.ToolCall{}, httpapi.InvalidField("input", "must be JSON")
	}
	v := h.o.Policy.Decide(toolpolicy.Call{CLI: in.CLI, Tool: in.Tool, Input: in.Input, CWD: in.CWD, Worktree: in.Worktree})
	canon := toolpolicy.Canonical(in.Input)
	sum := sha256.Sum256(canon)
	caller := httpapi.CallerOf(r)
	c := task.ToolCall{
		Agent: caller.Name, CLI: in.CLI, Tool: in.Tool, Kind: string(v.Kind),
		Input: bounded(string(canon)), InputTruncated: len(canon) > task.MaxToolInput, InputBytes: len(canon),
		InputDigest: hex.EncodeToString(sum[:]), CWD: in.CWD, Worktree: in.Worktree,
		Rule: v.Rule, Action: string(v.Action), Reason: v.Reason, Risk: v.Risk, AskTimeout: h.o.AskTimeout,
		ParkTimeout: h.o.ParkTimeout,
	}
	if caller.Task != "" && (caller.Role == amp.RoleExecutor || caller.Role == amp.RoleReviewer) {
		// A run's own credential: the ask names the run's role.
		c.Role = caller.Role
	}
	if c.Kind == string(toolpolicy.Network) && c.Action == string(toolpolicy.Ask) {
		h.allowedForRepo(r.Context(), in.TaskID, &c)
	}
	return h.o.Tasks.ToolCall(r.Context(), in.TaskID, c)
}

// bounded cuts s to task.MaxToolInput bytes on a rune boundary.
func bounded(s string) string {
	if len(s) <= task.MaxToolInput {
		return s
	}
	n := task.MaxToolInput
	for n > 0 && !validStart(s[n]) {
		n--
	}
	return s[:n]
}

func validStart(b byte) bool { return b&0xC0 != 0x80 }

func (h *Handlers) answer(w http.ResponseWriter, c task.ToolCall) {
	st := http.StatusOK
	if c.Decision == task.ToolPending {
		st = http.StatusAccepted
	}
	httpapi.WriteJSON(w, st, c)
}

// await looks for the ask's outcome record until it is there or the wait
// is over; a failed look is looked again.
func (h *Handlers) await(ctx context.Context, c task.ToolCall, wait time.Duration) task.ToolCall {
	_ = httpapi.Poll(ctx, wait, h.o.Poll, func() (bool, error) {
		got, ok, _ := h.read(ctx, c.ID+task.ToolCallOutcome)
		if ok {
			c = got
		}
		return ok, nil
	})
	return c
}

func (h *Handlers) read(ctx context.Context, id string) (task.ToolCall, bool, error) {
	if h.o.Store == nil {
		return task.ToolCall{}, false, task.Errorf(task.CodeUnavailable, "the SSOT is not available")
	}
	rec, err := h.o.Store.Get(ctx, id)
	if errors.Is(err, ssot.ErrNotFound) {
		return task.ToolCall{}, false, nil
	}
	if err != nil {
		return task.ToolCall{}, false, err
	}
	var c task.ToolCall
	if err := json.Unmarshal(rec.Body, &c); err != nil {
		return task.ToolCall{}, false, fmt.Errorf("reading tool call %s: %w", id, err)
	}
	return c, true, nil
}

// get answers a tool call as recorded, waiting for an ask's answer.
func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	wait, _, err := h.api.LongPoll(w, r)
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	taskID, _, ok := cutID(id)
	if !ok || !task.ValidID(taskID) {
		h.api.Error(w, r, httpapi.InvalidField("id", fmt.Sprintf("must be a tool call id <task_id>-tc<n>, not %q", id)))
		return
	}
	if err := httpapi.MayTask(r, taskID); err != nil {
		h.api.Error(w, r, err)
		return
	}
	if c, ok, err := h.read(r.Context(), id+task.ToolCallOutcome); err != nil || ok {
		h.done(w, r, c, err)
		return
	}
	c, ok, err := h.read(r.Context(), id)
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	if !ok {
		// Just asked: the record may not be written yet.
		c = task.ToolCall{ID: id, Decision: task.ToolPending}
	}
	if c.Decided() {
		h.answer(w, c)
		return
	}
	c = h.await(r.Context(), c, wait)
	if c.TaskID == "" {
		h.api.Error(w, r, task.Errorf(task.CodeNotFound, "no tool call %s", id))
		return
	}
	h.answer(w, c)
}

func (h *Handlers) done(w http.ResponseWriter, r *http.Request, c task.ToolCall, err error) {
	if err != nil {
		h.api.Error(w, r, err)
		return
	}
	h.answer(w, c)
}

// cutID splits "<task_id>-tc<n>".
func cutID(id string) (taskID string, n int, ok bool) {
	i := strings.LastIndex(id, "-tc")
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[i+3:])
	return id[:i], n, err == nil && n > 0
}

// list reads the task's tool calls from its chain, the outcome of an ask
// in place of its first record, filtered by tool, kind, decision and
// agent.
func (h *Handlers) list(w http.ResponseWriter, r *http.Request) {
	taskID := r.PathValue("id")
	if !task.ValidID(taskID) {
		h.api.Error(w, r, httpapi.InvalidField("id", fmt.Sprintf("must be a task id T-YYYY-NNN, not %q", taskID)))
		return
	}
	if h.o.Store == nil {
		h.api.Error(w, r, task.Errorf(task.CodeUnavailable, "the SSOT is not available"))
		return
	}
	q := r.URL.Query()
	var calls []task.ToolCall
	at := map[string]int{}
	cursor := ""
	for {
		recs, next, err := h.o.Store.History(r.Context(), taskID, ssot.Page{Limit: 1000, Cursor: cursor})
		if errors.Is(err, ssot.ErrNotFound) {
			h.api.Error(w, r, task.Errorf(task.CodeNotFound, "no task %s in the SSOT", taskID))
			return
		}
		if err != nil {
			h.api.Error(w, r, err)
			return
		}
		for _, rec := range recs {
			if rec.Kind != task.RecordToolCall {
				continue
			}
			var c task.ToolCall
			if json.Unmarshal(rec.Body, &c) != nil {
				continue
			}
			if i, ok := at[c.ID]; ok {
				calls[i] = c
				continue
			}
			at[c.ID] = len(calls)
			calls = append(calls, c)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	out := task.ToolCallList{ToolCalls: []task.ToolCall{}}
	for _, c := range calls {
		if keep(q.Get("tool"), c.Tool) && keep(q.Get("kind"), c.Kind) && keep(q.Get("decision"), c.Decision) && keep(q.Get("agent"), c.Agent) {
			out.ToolCalls = append(out.ToolCalls, c)
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func keep(want, have string) bool { return want == "" || want == have }
