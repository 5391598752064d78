package aof

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities"
	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

const (
	testTask   = "TASK-2026-02-09-057"
	testParent = "TASK-2026-02-09-050"
	agent      = "swe-backend"
)

var t0 = time.Date(2026, 2, 9, 20, 55, 0, 0, time.UTC)

// harness runs one AOF task workflow with its activities mocked.
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	in  Input

	mu        sync.Mutex
	saves     []aofacts.AOFSaveInput
	events    []ssot.AOFEvent
	artifacts map[string]ssot.AOFArtifact
	notices   []notify.Input
	// policy is the worker's, which the task reads first.
	policy task.Policy
	// leases are the lease steps, "acquire|renew|release <key or id>
	// <agent>"; holder, when set, holds every lease asked for.
	leases []string
	holder string
}

func newHarness(t *testing.T, mutate ...func(*Task)) *harness {
	t.Helper()
	tk := Task{TaskID: testTask, Title: "Users API", Assignee: agent, Status: StatusReady, Metadata: Metadata{ReviewRequired: true}}
	for _, m := range mutate {
		m(&tk)
	}
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	h := &harness{t: t, env: s.NewTestWorkflowEnvironment(), in: Input{Task: tk}, artifacts: map[string]ssot.AOFArtifact{},
		policy: task.Policy{Admins: []string{"alice"}}}
	env := h.env
	env.SetStartTime(t0)
	env.RegisterWorkflowWithOptions(TaskWorkflow, RegisterOptions())
	env.RegisterActivity(&activities.Activities{DecisionKey: testDecisionKey})
	env.RegisterActivity(&aofacts.AOF{})
	env.RegisterActivity(&aofacts.AOFLeases{})
	var leases *aofacts.AOFLeases
	lease := func(op string) func(context.Context, aofacts.AOFLeaseInput) (aofacts.AOFLeaseResult, error) {
		return func(_ context.Context, in aofacts.AOFLeaseInput) (aofacts.AOFLeaseResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.leases = append(h.leases, op+" "+in.Key+in.LeaseID+" "+in.AgentID+" "+in.TTL.String())
			if op == "acquire" && h.holder != "" {
				return aofacts.AOFLeaseResult{Holder: h.holder}, nil
			}
			return aofacts.AOFLeaseResult{LeaseID: "L1." + in.Key}, nil
		}
	}
	env.OnActivity(leases.AcquireAOFLease, mock.Anything, mock.Anything).Return(lease("acquire"))
	env.OnActivity(leases.RenewAOFLease, mock.Anything, mock.Anything).Return(lease("renew"))
	env.OnActivity(leases.ReleaseAOFLease, mock.Anything, mock.Anything).Return(lease("release"))
	var acts *activities.Activities
	var aof *aofacts.AOF
	env.OnActivity(acts.TaskPolicy, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.PolicyInput) (activities.PolicyResult, error) {
			return activities.PolicyResult{Policy: h.policy}, nil
		})
	env.OnActivity(acts.Notify, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in notify.Input) (notify.Result, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.notices = append(h.notices, in)
			return notify.Result{}, nil
		})
	env.OnActivity(aof.SaveAOF, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in aofacts.AOFSaveInput) (aofacts.AOFSaveResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.saves = append(h.saves, in)
			h.events = append(h.events, in.Save.Events...)
			for _, a := range in.Save.Artifacts {
				if a.Deleted {
					delete(h.artifacts, a.Name)
				} else {
					h.artifacts[a.Name] = a
				}
			}
			return aofacts.AOFSaveResult{}, nil
		})
	return h
}

// at runs fn at a virtual time after the start.
func (h *harness) at(d time.Duration, fn func()) { h.env.RegisterDelayedCallback(fn, d) }

// run executes the workflow; it may stay open (a task not done).
func (h *harness) run() {
	h.env.ExecuteWorkflow(TaskWorkflow, h.in)
	if h.env.IsWorkflowCompleted() {
		if err := h.env.GetWorkflowError(); err != nil && !errors.Is(err, context.Canceled) {
			// A task that is not done stays open until the test
			// environment's timeout ends it.
			var to *temporal.TimeoutError
			if !errors.As(err, &to) {
				h.t.Fatalf("workflow failed: %v", err)
			}
		}
	}
}

func (h *harness) task() Task {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(QueryTask)
	if err != nil {
		h.t.Fatalf("querying: %v", err)
	}
	var tk Task
	if err := v.Get(&tk); err != nil {
		h.t.Fatal(err)
	}
	return tk
}

// testDecisionKey is the decision key of the tests' worker.
var testDecisionKey = []byte(strings.Repeat("k", decision.MinKeySize))

type reply struct {
	done bool
	err  error
	out  any
}

func (h *harness) update(name string, arg any) *reply {
	if a, ok := arg.(decision.Answer); ok {
		// As workflows.Client.Decide signs every answer.
		a.At = time.Now()
		subject := a.DecisionID
		if i := strings.LastIndex(subject, "-d"); i >= 0 {
			subject = subject[:i]
		}
		a.Signature = decision.SignAnswer(testDecisionKey, subject, a)
		arg = a
	}
	// As Client signs every dispatch, session end and message.
	switch in := arg.(type) {
	case DispatchInput:
		if in.Signature == "" {
			in.At = time.Now()
			in.Signature = decision.SignAnswer(testDecisionKey, WorkflowID(h.in.Task.TaskID), must(in.SignedAs()))
			arg = in
		}
	case SessionEndInput:
		if in.Signature == "" {
			in.At = time.Now()
			in.Signature = decision.SignAnswer(testDecisionKey, WorkflowID(h.in.Task.TaskID), must(in.SignedAs()))
			arg = in
		}
	case MessageInput:
		if in.Signature == "" {
			in.At = time.Now()
			in.Signature = decision.SignAnswer(testDecisionKey, WorkflowID(h.in.Task.TaskID), must(in.SignedAs()))
			arg = in
		}
	}
	r := &reply{}
	h.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   func(err error) { r.err, r.done = err, true },
		OnComplete: func(out any, err error) { r.out, r.err, r.done = out, err, true },
	}, arg)
	return r
}

// result decodes an update's Result.
func (r *reply) result(t *testing.T) Result {
	t.Helper()
	if !r.done || r.err != nil {
		t.Fatalf("update not answered or refused: done=%v err=%v", r.done, r.err)
	}
	b, _ := json.Marshal(r.out)
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// refused asserts the update was refused with code.
func (r *reply) refused(t *testing.T, code task.Code) {
	t.Helper()
	if !r.done || r.err == nil {
		t.Fatalf("update not refused (done=%v)", r.done)
	}
	var app *temporal.ApplicationError
	if !errors.As(r.err, &app) {
		t.Fatalf("refusal %v is not an application error", r.err)
	}
	e, ok := refusal.Of(app)
	if !ok || e.Code != code {
		t.Fatalf("refused with %v, want code %s", r.err, code)
	}
}

func (h *harness) dispatch(ttl time.Duration) *reply {
	return h.update(UpdateDispatch, DispatchInput{AgentID: agent, TTLMs: ttl.Milliseconds()})
}

func (h *harness) send(m Message, parentDepth int) *reply {
	return h.update(UpdateMessage, MessageInput{Message: m, ParentDepth: parentDepth})
}

func msg(typ string, at time.Time) Message {
	return Message{Type: typ, TaskID: testTask, FromAgent: agent, ToAgent: "dispatcher", SentAt: at}
}

func completion(outcome Outcome, at time.Time, blockers ...string) Message {
	m := msg(TypeCompletionReport, at)
	m.Completion = &CompletionReport{Outcome: outcome, SummaryRef: "outputs/summary.md", Deliverables: []string{"src/api/users.ts"},
		Tests: TestReport{Total: 10, Passed: 8, Failed: 2}, Blockers: blockers, Notes: "80% complete"}
	return m
}

// eventsOf returns the logged events of a type.
func (h *harness) eventsOf(typ string) []ssot.AOFEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []ssot.AOFEvent
	for _, e := range h.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func payloadOf(t *testing.T, e ssot.AOFEvent) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// transitions lists the logged transitions as "from>to:reason".
func (h *harness) transitions(t *testing.T) []string {
	var out []string
	for _, e := range h.eventsOf(EventTaskTransitioned) {
		p := payloadOf(t, e)
		out = append(out, p["from"].(string)+">"+p["to"].(string)+":"+p["reason"].(string))
	}
	return out
}

func (h *harness) artifact(t *testing.T, name string, v any) bool {
	t.Helper()
	h.mu.Lock()
	a, ok := h.artifacts[name]
	h.mu.Unlock()
	if ok && v != nil {
		if err := json.Unmarshal([]byte(a.Body), v); err != nil {
			t.Fatalf("artifact %s: %v", name, err)
		}
	}
	return ok
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
