package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows/decide"
)

const testTaskID = "T-2026-001"

// harness runs one task workflow with every activity mocked and plays
// the agents and admins at virtual times.
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	in  task.Input

	mu        sync.Mutex
	delivered []amp.Message
	// deliverIns and deliverAt are every Deliver call's input and
	// virtual time.
	deliverIns []activities.DeliverInput
	deliverAt  []time.Time
	records    []activities.RecordEntry
	// revs are the RecordInput.Rev of each Record call, in order.
	revs     []int64
	notices  []notify.Input
	ciCalls  int
	ciInputs []activities.CIStatusInput
	replies  []*reply

	// commandAgents makes deliveries refuse to run as local activities,
	// as the worker does for command-mode agents.
	commandAgents bool
	// runnerHost, when set, makes deliveries refuse to run as local
	// activities as a runner host's worker does, naming the host.
	// deliverQueues are the task queues of the Deliver activities, and
	// deliveredOn those of the deliveries in deliverIns;
	// hostGone, when set, times out a delivery on a queue no host polls;
	// rehomeTo and goneSeen answer RunnerHost.
	runnerHost    string
	deliverQueues []string
	deliveredOn   []string
	hostGone      func(queue string) bool
	rehomeTo      string
	goneSeen      time.Time
	// deliverErr, when set, fails the delivery of a message.
	deliverErr func(m amp.Message) error
	// ci answers the n-th CI read (from 1).
	ci func(n int) activities.CIStatusResult
	// checkBranch answers the git check before dispatch.
	checkBranch func(in activities.CheckBranchInput) (activities.CheckBranchResult, error)
	// acquireLease answers the branch lease's acquire (granted when nil);
	// leaseCalls lists the lease activities called, in order.
	acquireLease func(in activities.BranchLeaseInput) (activities.BranchLeaseResult, error)
	// renewLease answers a renewal (renewed when nil).
	renewLease func(in activities.BranchLeaseInput) (activities.BranchLeaseResult, error)
	leaseCalls []string
	// cleanups are the worktree cleanups asked for, each with the number
	// of lease calls made before it.
	cleanups []cleanupCall
	// checkResult answers the git check of a result.
	checkResult func(in activities.CheckResultInput) (activities.CheckResultOutput, error)
	// workerPolicy is the worker's policy; by default the input's.
	workerPolicy func() (task.Policy, error)
	// recordErr, when set, fails a Record call before it stores anything.
	recordErr func(in activities.RecordInput) error
	// refusals is the error log of the worker's decision-key checks, in
	// activities and in update validators.
	refusals *errorLog
	// recordIns are the Record calls that stored their batch, in order.
	recordIns []activities.RecordInput
	// leaseMoved makes a Record call with a Release find the lease no
	// longer held directly, as the store does once a lease workflow
	// adopted it: nothing of the batch is written.
	leaseMoved bool
	// releaseErr, when set, fails ReleaseBranchLease.
	releaseErr error
}

// errorLog is an activities.ErrorLog that keeps its entries.
type errorLog struct {
	mu      sync.Mutex
	entries []ssot.ErrorEntry
}

func (l *errorLog) AppendError(_ context.Context, e ssot.ErrorEntry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	return nil
}

func (l *errorLog) kept() []ssot.ErrorEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

type cleanupCall struct {
	in               activities.CleanupWorktreesInput
	leaseCallsBefore int
	queue            string
}

// reply is how the workflow answered one update.
type reply struct {
	name string
	id   string
	done bool
	err  error
	out  any
}

func testPlan(risk amp.Risk, subtasks ...string) amp.TaskDispatch {
	p := amp.TaskDispatch{
		Description:        "Rework the breathing engine timer",
		Repo:               "/repos/rhylm",
		Branch:             "feature/watch-breath-v2",
		AcceptanceCriteria: []string{"timing error < 500ms", "all tests pass"},
		RiskLevel:          risk,
	}
	for _, id := range subtasks {
		p.Subtasks = append(p.Subtasks, amp.Subtask{SubtaskID: id, Description: "step " + id, EstimatedLines: 40})
	}
	return p
}

func newHarness(t *testing.T, plan amp.TaskDispatch, mutate ...func(*task.Input)) *harness {
	t.Helper()
	pol := NewPolicy(config.Default())
	pol.Admins = []string{"alice", "bob"}
	pol.CI = true
	in := task.Input{TaskID: testTaskID, Plan: plan, Policy: pol, Coordinator: "planner"}
	for _, m := range mutate {
		m(&in)
	}
	var s testsuite.WorkflowTestSuite
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s.SetLogger(log.NewStructuredLogger(quiet))
	h := &harness{t: t, env: s.NewTestWorkflowEnvironment(), in: in, refusals: &errorLog{}}
	h.ci = func(int) activities.CIStatusResult { return activities.CIStatusResult{State: activities.CIPassed} }
	h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
		return activities.CheckResultOutput{Commit: in.Commit, Actual: in.Claimed, DiffURL: "/ssot/diffs/" + in.MsgID + ".diff"}, nil
	}
	env := h.env
	env.RegisterWorkflow(Task)
	// As workers.NewWorker does: the same key for the engine's local
	// activity and the update validators.
	env.RegisterActivity(&activities.Activities{DecisionKey: testDecisionKey, Refusals: h.refusals, Log: quiet})
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{
		decide.Interceptor(&activities.AnswerChecker{Key: testDecisionKey, Refusals: h.refusals, Log: quiet}),
	}})
	h.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
		return activities.CheckBranchResult{DefaultBranch: "main", Head: "abc"}, nil
	}
	h.workerPolicy = func() (task.Policy, error) { return in.Policy, nil }
	env.OnActivity(acts.TaskPolicy, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.PolicyInput) (activities.PolicyResult, error) {
			p, err := h.workerPolicy()
			return activities.PolicyResult{Policy: p}, err
		})
	env.OnActivity(acts.CheckBranch, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.CheckBranchInput) (activities.CheckBranchResult, error) {
			return h.checkBranch(in)
		})
	env.OnActivity(acts.CheckResult, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.CheckResultInput) (activities.CheckResultOutput, error) {
			return h.checkResult(in)
		})
	env.OnActivity(acts.CIStatus, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.CIStatusInput) (activities.CIStatusResult, error) {
			h.mu.Lock()
			h.ciCalls++
			h.ciInputs = append(h.ciInputs, in)
			n := h.ciCalls
			h.mu.Unlock()
			return h.ci(n), nil
		})
	env.OnActivity(acts.Record, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RecordInput) (activities.RecordResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.recordErr != nil {
				if err := h.recordErr(in); err != nil {
					return activities.RecordResult{}, err
				}
			}
			if in.Release != nil {
				h.leaseCalls = append(h.leaseCalls, "release-in-record")
				if h.leaseMoved {
					return activities.RecordResult{}, nil
				}
			}
			h.records = append(h.records, in.Entries...)
			h.revs = append(h.revs, in.Rev)
			h.recordIns = append(h.recordIns, in)
			return activities.RecordResult{Written: len(in.Entries), Released: in.Release != nil}, nil
		})
	env.OnActivity(acts.Deliver, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.DeliverInput) (activities.DeliverResult, error) {
			if h.commandAgents && activity.GetInfo(ctx).IsLocalActivity {
				return activities.DeliverResult{}, temporal.NewNonRetryableApplicationError("command mode", activities.ErrNeedsActivity, nil)
			}
			if h.runnerHost != "" && activity.GetInfo(ctx).IsLocalActivity {
				return activities.DeliverResult{}, temporal.NewNonRetryableApplicationError("runner mode", activities.ErrNeedsActivity, nil,
					activities.NeedsActivityDetail{Mode: config.AgentModeRunner, Host: h.runnerHost})
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			queue := activity.GetInfo(ctx).TaskQueue
			h.deliverQueues = append(h.deliverQueues, queue)
			if h.hostGone != nil && h.hostGone(queue) {
				return activities.DeliverResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
			}
			h.delivered = append(h.delivered, in.Message)
			h.deliverIns = append(h.deliverIns, in)
			h.deliveredOn = append(h.deliveredOn, queue)
			h.deliverAt = append(h.deliverAt, h.env.Now())
			if h.deliverErr != nil {
				if err := h.deliverErr(in.Message); err != nil {
					return activities.DeliverResult{}, err
				}
			}
			return activities.DeliverResult{Mode: "pull"}, nil
		})
	env.OnActivity(acts.RunnerHost, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.RunnerHostInput) (activities.RunnerHostResult, error) {
			return activities.RunnerHostResult{Host: h.rehomeTo, GoneSeenAt: h.goneSeen}, nil
		})
	env.OnActivity(acts.AcquireBranchLease, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.leaseCalls = append(h.leaseCalls, "acquire")
			if h.acquireLease != nil {
				return h.acquireLease(in)
			}
			return activities.BranchLeaseResult{Lease: &task.BranchLease{LeaseID: "L1.x", ResourceKey: activities.BranchKey(in.Repo, in.Branch)}}, nil
		})
	env.OnActivity(acts.RenewBranchLease, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.leaseCalls = append(h.leaseCalls, "renew")
			if h.renewLease != nil {
				return h.renewLease(in)
			}
			return activities.BranchLeaseResult{Lease: &task.BranchLease{LeaseID: in.LeaseID}}, nil
		})
	env.OnActivity(acts.ReleaseBranchLease, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.leaseCalls = append(h.leaseCalls, "release")
			return activities.BranchLeaseResult{}, h.releaseErr
		})
	env.OnActivity(acts.CleanupWorktrees, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.CleanupWorktreesInput) (activities.CleanupWorktreesResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.cleanups = append(h.cleanups, cleanupCall{in: in, leaseCallsBefore: len(h.leaseCalls), queue: activity.GetInfo(ctx).TaskQueue})
			if h.hostGone != nil && h.hostGone(activity.GetInfo(ctx).TaskQueue) {
				return activities.CleanupWorktreesResult{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
			}
			return activities.CleanupWorktreesResult{Salvaged: "ampflow/salvage/" + in.TaskID + "/1"}, nil
		})
	env.OnActivity(acts.Notify, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in notify.Input) (notify.Result, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.notices = append(h.notices, in)
			return notify.Result{}, nil
		})
	return h
}

// at runs fn at a virtual time after the start.
func (h *harness) at(d time.Duration, fn func()) { h.env.RegisterDelayedCallback(fn, d) }

// run executes the workflow to its end and returns its result.
func (h *harness) run() task.Result {
	h.t.Helper()
	h.env.ExecuteWorkflow(Task, h.in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatalf("workflow did not complete; state: %+v", h.state())
	}
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatalf("workflow failed: %v", err)
	}
	var res task.Result
	if err := h.env.GetWorkflowResult(&res); err != nil {
		h.t.Fatalf("reading result: %v", err)
	}
	return res
}

// runRefused executes a workflow whose start is refused: it must end
// failed with a task.ErrRefused. It returns the task's end as its state
// query gives it, and the refusal.
func (h *harness) runRefused() (task.Result, task.Refusal) {
	h.t.Helper()
	h.env.ExecuteWorkflow(Task, h.in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatalf("workflow did not complete; state: %+v", h.state())
	}
	var app *temporal.ApplicationError
	err := h.env.GetWorkflowError()
	if !errors.As(err, &app) || app.Type() != task.ErrRefused {
		h.t.Fatalf("workflow ended with %v, want a %s failure", err, task.ErrRefused)
	}
	var r task.Refusal
	if err := app.Details(&r); err != nil {
		h.t.Fatalf("reading the refusal: %v", err)
	}
	st := h.state()
	return task.Result{TaskID: st.TaskID, Status: st.Status, Reason: st.Reason}, r
}

func (h *harness) state() task.State {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(task.QueryState)
	if err != nil {
		h.t.Fatalf("querying state: %v", err)
	}
	var st task.State
	if err := v.Get(&st); err != nil {
		h.t.Fatalf("decoding state: %v", err)
	}
	return st
}

// update sends an update; the reply is filled in once it is answered.
func (h *harness) update(name, id string, arg any) *reply {
	// As workflows.Client signs every answer, cancel and replan.
	switch a := arg.(type) {
	case decision.Answer:
		if a.Signature == "" {
			a.At = time.Now()
			a.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, a)
			arg = a
		}
	case task.CancelInput:
		if a.Signature == "" {
			a.At = time.Now()
			a.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, must(a.SignedAs()))
			arg = a
		}
	case task.ReplanInput:
		if a.Signature == "" {
			a.At = time.Now()
			a.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, must(a.SignedAs()))
			arg = a
		}
	case task.SubmitInput:
		if a.Signature == "" {
			a.At = time.Now()
			a.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, must(a.SignedAs()))
			arg = a
		}
	}
	return h.send(name, id, arg)
}

// heartbeat signals a heartbeat signed as workflows.Client.Heartbeat
// signs it.
func (h *harness) heartbeat(in task.HeartbeatInput) {
	in.At = time.Now()
	in.Signature = decision.SignAnswer(testDecisionKey, h.in.TaskID, must(in.SignedAs()))
	h.env.SignalWorkflow(task.SignalHeartbeat, in)
}

// testDecisionKey is the decision key of the tests' worker.
var testDecisionKey = []byte(strings.Repeat("k", decision.MinKeySize))

// send sends an update as it is: an answer unsigned.
func (h *harness) send(name, id string, arg any) *reply {
	r := &reply{name: name, id: id}
	h.replies = append(h.replies, r)
	h.env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { r.err, r.done = err, true },
		OnComplete: func(out any, err error) {
			r.out, r.err, r.done = out, err, true
		},
	}, arg)
	return r
}

func (h *harness) submitRaw(id string, raw []byte) *reply {
	return h.update(task.UpdateSubmit, id, task.SubmitInput{Raw: raw})
}

func (h *harness) submit(v any, id string) *reply {
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatalf("encoding: %v", err)
	}
	return h.submitRaw(id, b)
}

// outboxTo returns the message awaiting an ACK from role.
func (h *harness) outboxTo(role amp.Role) amp.Message {
	h.t.Helper()
	for _, m := range h.state().Outbox {
		if m.To == role {
			return m
		}
	}
	h.t.Fatalf("no message for %s in the outbox; state %s", role, h.state().Status)
	return amp.Message{}
}

// ack has role ACK the message waiting for it.
func (h *harness) ack(role amp.Role) *reply {
	m := h.outboxTo(role)
	a := amp.NewAck(role, m, h.env.Now())
	return h.submit(a, a.MsgID)
}

func yes() *bool { b := true; return &b }

// result has the executor report on the current subtask.
func (h *harness) result(status amp.CompletionStatus, blockers ...string) (amp.Message, *reply) {
	m := h.resultMsg(status, blockers...)
	return m, h.submit(m, m.MsgID)
}

// resultMsg builds a task_result for the current subtask.
func (h *harness) resultMsg(status amp.CompletionStatus, blockers ...string) amp.Message {
	st := h.state()
	p := &amp.TaskResult{
		SubtaskID:        st.Subtask.SubtaskID,
		CompletionStatus: status,
		DiffSummary:      amp.DiffSummary{FilesChanged: []string{"Sources/BreathEngine.swift"}, LinesAdded: 10, LinesRemoved: 2},
		SelfAssessment:   amp.SelfAssessment{CriteriaMet: []*bool{yes(), nil}, Notes: []string{"ok", "needs CI"}},
		WorkLog:          []amp.WorkLogEntry{{Timestamp: "2026-02-26T14:28:00Z", Action: "edit", File: "BreathEngine.swift", Detail: "timer"}},
		CommitHash:       "a3f8d21",
		Blockers:         blockers,
	}
	return amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, testTaskID, h.env.Now(), p)
}

// verdict has the reviewer decide.
func (h *harness) verdict(d amp.Decision, confidence float64) (amp.Message, *reply) {
	p := &amp.ReviewVerdict{
		Decision:        d,
		CriteriaResults: []amp.CriterionResult{{Criterion: "timing error < 500ms", Passed: yes(), Evidence: "measured"}},
		Confidence:      confidence,
	}
	if d == amp.DecisionRejected {
		p.Issues = []amp.Issue{{Severity: amp.SeverityCritical, File: "BreathEngine.swift", Line: 87, Description: "session released by ARC", SuggestedFix: "keep a reference"}}
	}
	if d == amp.DecisionApprovedWithFix {
		p.DirectFixes = []amp.DirectFix{{File: "BreathEngine.swift", ChangeType: amp.ChangeTypo, DiffLines: 1}}
	}
	m := amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, testTaskID, h.env.Now(), p)
	return m, h.submit(m, m.MsgID)
}

// decide has an admin take the pending decision.
func (h *harness) decide(by, option, note string) *reply {
	h.t.Helper()
	st := h.state()
	if st.Pending == nil {
		h.t.Fatalf("no pending decision (status %s)", st.Status)
	}
	return h.update(task.UpdateDecide, "", decision.Answer{DecisionID: st.Pending.ID, Digest: st.Pending.Digest, Option: option, Note: note, By: by, Channel: "cli"})
}

// round plays one clean subtask: ACK, complete result, review ACK,
// approval, one virtual second apart from start.
func (h *harness) round(start time.Duration) time.Duration {
	h.at(start+1*time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(start+2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(start+3*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(start+4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	return start + 4*time.Second
}

// refused asserts that an update was refused with the given error type.
func refused(t *testing.T, r *reply, code task.Code) *task.Error {
	t.Helper()
	var app *temporal.ApplicationError
	if !r.done {
		t.Errorf("update %s %s was never answered", r.name, r.id)
		return nil
	}
	if r.err == nil || !errors.As(r.err, &app) {
		t.Errorf("update %s %s: got error %v, want a refusal %s", r.name, r.id, r.err, code)
		return nil
	}
	e, ok := refusal.Of(app)
	if !ok || e.Code != code || app.Type() != string(code) {
		t.Errorf("update %s %s: got error %v (type %s, details %+v), want a refusal %s", r.name, r.id, r.err, app.Type(), e, code)
		return nil
	}
	return e
}

// accepted asserts that an update was taken.
func accepted(t *testing.T, r *reply) {
	t.Helper()
	if !r.done || r.err != nil {
		t.Errorf("update %s %s: answered %v, error %v", r.name, r.id, r.done, r.err)
	}
}

func (h *harness) deliveredOf(typ amp.Type) []amp.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []amp.Message
	for _, m := range h.delivered {
		if m.Type == typ {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) recordedMessages(typ amp.Type) []amp.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []amp.Message
	for _, r := range h.records {
		if r.Kind != ssot.KindMessage {
			continue
		}
		var m amp.Message
		if err := json.Unmarshal(r.Body, &m); err != nil {
			h.t.Fatalf("record %s: %v", r.ID, err)
		}
		if m.Type == typ {
			out = append(out, m)
		}
	}
	return out
}

func (h *harness) recordIDs() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := map[string]int{}
	for _, r := range h.records {
		n[r.ID]++
	}
	return n
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
