package aof

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/ampflow/ampflow/activities"
	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows/decide"
)

const reviewID = "T-2026-0209057001"

func TestAgentReviewID(t *testing.T) {
	for in, want := range map[string]string{
		"TASK-2026-02-09-057|1":   "T-2026-0209057001",
		"TASK-2026-12-31-999|999": "T-2026-1231999999",
	} {
		id, round, _ := strings.Cut(in, "|")
		n := map[string]int{"1": 1, "999": 999}[round]
		if got := AgentReviewID(id, n); got != want || !task.ValidID(got) {
			t.Errorf("AgentReviewID(%s, %d) = %q, want %q (a valid AMP task id)", id, n, got, want)
		}
	}
}

// reviewHarness runs one AgentReviewWorkflow with its activities mocked.
type reviewHarness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	in  AgentReviewInput

	mu sync.Mutex
	// failSave, when set, fails every save from then on for good.
	failSave bool
	saves    []aofacts.AgentReviewSaveInput
	records  map[string]activities.RecordEntry
	// deliverErr, when set, is the delivery's answer.
	deliverErr error
	delivered  []amp.Message
}

// newReviewHarness makes the harness; each save takes saveTime of the
// workflow's clock, if given.
func newReviewHarness(t *testing.T, saveTime ...time.Duration) *reviewHarness {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	h := &reviewHarness{t: t, env: s.NewTestWorkflowEnvironment(), records: map[string]activities.RecordEntry{}}
	res := &RunResult{TaskID: testTask, AgentID: agent, CompletedAt: Timestamp{t0}, Outcome: OutcomeDone, SummaryRef: "outputs/summary.md",
		Deliverables: []string{"src/api/users.ts"}, Tests: TestReport{Total: 10, Passed: 10}, Notes: "all done"}
	h.in = AgentReviewInput{ID: reviewID, Round: 1, Reviewer: AgentReviewer{Repo: "/src/app", Branch: "aof/users"},
		Task:       Task{TaskID: testTask, Title: "Users API", Body: "Add the users endpoints.", Status: StatusReview, Result: res},
		AckTimeout: 5 * time.Minute, ReplyTimeout: 30 * time.Minute}
	env := h.env
	env.SetStartTime(t0)
	env.RegisterWorkflowWithOptions(AgentReviewWorkflow, RegisterAgentReviewOptions())
	env.RegisterActivity(&activities.Activities{DecisionKey: testDecisionKey})
	env.RegisterActivity(&aofacts.AOF{})
	// The reviewer's submissions are checked in their validator, with the
	// key the worker hands its validators.
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{
		decide.Interceptor(&activities.AnswerChecker{Key: testDecisionKey, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}),
	}})
	var acts *activities.Activities
	var aof *aofacts.AOF
	save := env.OnActivity(aof.SaveAgentReview, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in aofacts.AgentReviewSaveInput) (aofacts.AgentReviewSaveResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.failSave {
				return aofacts.AgentReviewSaveResult{}, temporal.NewNonRetryableApplicationError("conflict", "ConflictError", nil)
			}
			h.saves = append(h.saves, in)
			for _, r := range in.Records {
				h.records[r.ID] = r
			}
			return aofacts.AgentReviewSaveResult{}, nil
		})
	if len(saveTime) > 0 {
		save.After(saveTime[0])
	}
	env.OnActivity(acts.Deliver, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.DeliverInput) (activities.DeliverResult, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.delivered = append(h.delivered, in.Message)
			return activities.DeliverResult{Mode: "pull"}, h.deliverErr
		})
	return h
}

func (h *reviewHarness) at(d time.Duration, fn func()) { h.env.RegisterDelayedCallback(fn, d) }

func (h *reviewHarness) submit(v any) *reply {
	raw, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.update(task.UpdateSubmit, task.SubmitInput{Raw: raw})
}

// request is the review_request the harness delivered.
func (h *reviewHarness) request() amp.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.delivered) == 0 {
		h.t.Fatal("no review_request delivered")
	}
	return h.delivered[0]
}

func (h *reviewHarness) run() AgentVerdict {
	h.t.Helper()
	h.env.ExecuteWorkflow(AgentReviewWorkflow, h.in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("the review did not end")
	}
	var v AgentVerdict
	if err := h.env.GetWorkflowResult(&v); err != nil {
		h.t.Fatal(err)
	}
	return v
}

func verdictOf(t *testing.T, req amp.Message, d amp.Decision, confidence float64, issues ...amp.Issue) amp.Message {
	t.Helper()
	v := &amp.ReviewVerdict{Decision: d, Confidence: confidence, Issues: issues,
		CriteriaResults: []amp.CriterionResult{{Criterion: "users endpoints", Passed: new(d != amp.DecisionRejected), Evidence: "read users.ts"}}}
	m := amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, req.TaskID, t0.Add(10*time.Minute), v)
	m.ContextRef = []string{req.MsgID}
	return m
}

// TestAgentReviewVerdict: the reviewer gets a valid review_request whose
// references resolve to the AOF task's AMP records; its ACK and verdict
// are taken, anything else is refused, and the verdict is returned with
// the inbox cleared.
func TestAgentReviewVerdict(t *testing.T) {
	h := newReviewHarness(t)
	var ack, verdict, wrongTask, asExecutor, wrongAck, result *reply
	var sent amp.Message
	h.at(time.Minute, func() {
		req := h.request()
		if err := req.Validate(); err != nil {
			t.Errorf("the review_request is not valid AMP: %v", err)
		}
		if req.TaskID != reviewID || req.To != amp.RoleReviewer {
			t.Errorf("review_request to %s of %s", req.To, req.TaskID)
		}
		p := req.Payload.(*amp.ReviewRequest)
		h.mu.Lock()
		for _, ref := range []string{p.OriginalDispatchRef, p.TaskResultRef} {
			rec, ok := h.records[ref]
			if !ok {
				t.Errorf("%s is not recorded", ref)
				continue
			}
			var m amp.Message
			if err := json.Unmarshal(rec.Body, &m); err != nil {
				t.Errorf("record %s: %v", ref, err)
			} else if err := m.Validate(); err != nil {
				t.Errorf("record %s is not valid AMP: %v", ref, err)
			}
		}
		if out := h.saves[0].Outbox; len(out) != 1 || out[0].MsgID != req.MsgID || out[0].Role != "reviewer" {
			t.Errorf("the first save's inbox is %+v, want the review_request", out)
		}
		h.mu.Unlock()
		if !strings.Contains(p.CoordinatorNotes, testTask) || !strings.Contains(p.DiffURL, "aof/users") {
			t.Errorf("the request does not say what it reviews: %+v", p)
		}
		wrongTask = h.submit(amp.NewAck(amp.RoleReviewer, amp.Message{MsgID: req.MsgID, TaskID: "T-2026-001"}, t0))
		wrongAck = h.submit(amp.NewAck(amp.RoleReviewer, amp.Message{MsgID: "review_request-x", TaskID: reviewID}, t0))
		asExecutor = h.submit(amp.NewAck(amp.RoleExecutor, req, t0))
		ack = h.submit(amp.NewAck(amp.RoleReviewer, req, t0.Add(time.Minute)))
	})
	h.at(2*time.Minute, func() {
		req := h.request()
		res := amp.NewMessage(amp.RoleReviewer, amp.RoleCoordinator, reviewID, t0, &amp.TaskResult{SubtaskID: "x", CompletionStatus: amp.StatusComplete,
			SelfAssessment: amp.SelfAssessment{CriteriaMet: []*bool{nil}, Notes: []string{}}, WorkLog: []amp.WorkLogEntry{}, DiffSummary: amp.DiffSummary{FilesChanged: []string{}}})
		result = h.submit(res)
		sent = verdictOf(t, req, amp.DecisionRejected, 0.9, amp.Issue{Severity: amp.SeverityMajor, File: "src/api/users.ts", Line: 12, Description: "no auth check"})
		verdict = h.submit(sent)
	})
	v := h.run()
	for name, r := range map[string]*reply{"a wrong task_id": wrongTask, "an ACK of another message": wrongAck, "the executor's ACK": asExecutor, "a task_result": result} {
		if !r.done || r.err == nil {
			t.Errorf("%s was taken", name)
		}
	}
	if !ack.done || ack.err != nil || !verdict.done || verdict.err != nil {
		t.Fatalf("ack %v, verdict %v", ack.err, verdict.err)
	}
	if v.ID != reviewID || v.MsgID != sent.MsgID || v.Verdict == nil || v.Verdict.Decision != amp.DecisionRejected || v.NoAnswer != "" {
		t.Fatalf("returned %+v", v)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if last := h.saves[len(h.saves)-1]; len(last.Outbox) != 0 {
		t.Errorf("the inbox still holds %+v after the verdict", last.Outbox)
	}
	kinds := map[ssot.RecordKind]int{}
	for _, r := range h.records {
		kinds[r.Kind]++
	}
	// dispatch, result, request, verdict; the reviewer's ACK and the
	// coordinator's ACK of the verdict.
	if kinds[ssot.KindMessage] != 4 || kinds[ssot.KindAck] != 2 {
		t.Errorf("records by kind %v, want 4 messages and 2 ACKs", kinds)
	}
}

// TestAgentReviewNoAnswer: a reviewer that does not ACK, that goes quiet
// after its ACK (heartbeats put the deadline off), or that cannot be
// reached ends the review without a verdict, saying why.
func TestAgentReviewNoAnswer(t *testing.T) {
	t.Run("NoAck", func(t *testing.T) {
		h := newReviewHarness(t)
		v := h.run()
		if v.Verdict != nil || !strings.Contains(v.NoAnswer, "did not ACK") {
			t.Errorf("returned %+v", v)
		}
		if d := h.env.Now().Sub(t0); d < 5*time.Minute || d > 6*time.Minute {
			t.Errorf("gave up after %s, want the ACK timeout of 5m", d)
		}
	})
	t.Run("Quiet", func(t *testing.T) {
		h := newReviewHarness(t)
		h.at(time.Minute, func() { h.submit(amp.NewAck(amp.RoleReviewer, h.request(), t0)) })
		h.at(20*time.Minute, func() {
			h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleReviewer, Note: "reading"})
		})
		v := h.run()
		if v.Verdict != nil || !strings.Contains(v.NoAnswer, "no review_verdict within 30m") {
			t.Errorf("returned %+v", v)
		}
		if d := h.env.Now().Sub(t0); d < 50*time.Minute || d > 51*time.Minute {
			t.Errorf("gave up after %s, want 30m after the heartbeat at 20m", d)
		}
	})
	t.Run("Undeliverable", func(t *testing.T) {
		h := newReviewHarness(t)
		h.deliverErr = temporal.NewNonRetryableApplicationError("the reviewer agent exited 1", activities.ErrDelivery, nil)
		v := h.run()
		if v.Verdict != nil || !strings.Contains(v.NoAnswer, "exited 1") {
			t.Errorf("returned %+v", v)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if last := h.saves[len(h.saves)-1]; len(last.Outbox) != 0 {
			t.Errorf("the inbox still holds %+v", last.Outbox)
		}
	})
}

// TestAgentReviewAnswers: an ACK taken while the request is being saved
// still starts the verdict's deadline; a second ACK (a retried POST
// /v1/acks has a new msg_id) is the first one again and recorded once;
// an escalation or a cancel ends the review without a verdict.
func TestAgentReviewAnswers(t *testing.T) {
	t.Run("AckDuringSave", func(t *testing.T) {
		h := newReviewHarness(t, 20*time.Second)
		var first, second *reply
		h.at(5*time.Second, func() {
			// Not delivered yet: the reviewer read the saved inbox.
			req := amp.Message{MsgID: amp.MsgID(amp.TypeReviewRequest, reviewID, t0), TaskID: reviewID}
			first = h.submit(amp.NewAck(amp.RoleReviewer, req, t0.Add(5*time.Second)))
			second = h.submit(amp.NewAck(amp.RoleReviewer, req, t0.Add(6*time.Second)))
		})
		v := h.run()
		if !strings.Contains(v.NoAnswer, "no review_verdict within 30m") {
			t.Errorf("returned %+v", v)
		}
		if d := h.env.Now().Sub(t0); d < 30*time.Minute {
			t.Errorf("gave up after %s, want 30m after the ACK", d)
		}
		if first.err != nil || second.err != nil {
			t.Fatalf("ACKs refused: %v, %v", first.err, second.err)
		}
		var a, b task.SubmitResult
		mustDecode(t, first.out, &a)
		mustDecode(t, second.out, &b)
		if a.Duplicate || !b.Duplicate || b.MsgID != a.MsgID {
			t.Errorf("first ACK %+v, second %+v: want the second a duplicate of the first", a, b)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, r := range h.records {
			if r.Kind == ssot.KindAck {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d ACK records, want 1", n)
		}
	})
	t.Run("Escalation", func(t *testing.T) {
		h := newReviewHarness(t)
		var esc *reply
		h.at(time.Minute, func() {
			req := h.request()
			h.submit(amp.NewAck(amp.RoleReviewer, req, t0))
			e := amp.NewMessage(amp.RoleReviewer, amp.RoleAdmin, reviewID, t0.Add(time.Minute), &amp.Escalation{
				EscalationType: amp.EscUnknown, Severity: amp.SeverityWarning, TriggeredBy: amp.RoleReviewer,
				Description: "users.ts is not on aof/users", AffectedMsgs: []string{req.MsgID}, SystemStateSnapshot: map[string]any{}})
			esc = h.submit(e)
		})
		v := h.run()
		if esc.err != nil {
			t.Fatalf("escalation refused: %v", esc.err)
		}
		if v.Verdict != nil || !strings.Contains(v.NoAnswer, "escalated") || !strings.Contains(v.NoAnswer, "users.ts is not on aof/users") {
			t.Errorf("returned %+v", v)
		}
	})
	t.Run("Cancel", func(t *testing.T) {
		h := newReviewHarness(t)
		var anon, raw, c *reply
		h.at(time.Minute, func() {
			anon = h.update(task.UpdateCancel, task.CancelInput{Reason: "taking it over"})
			raw = h.send(task.UpdateCancel, task.CancelInput{Reason: "taking it over", By: "alice", Signed: decision.Signed{At: time.Now(), Signature: "00"}})
		})
		h.at(2*time.Minute, func() {
			c = h.update(task.UpdateCancel, task.CancelInput{Reason: "taking it over", By: "alice"})
		})
		v := h.run()
		if anon.err == nil || c.err != nil {
			t.Errorf("cancel without by: %v; by alice: %v", anon.err, c.err)
		}
		raw.refused(t, task.CodeForbidden)
		if v.Verdict != nil || v.NoAnswer != "the review was cancelled by alice: taking it over" {
			t.Errorf("returned %+v", v)
		}
	})
}

// update sends an update signed as workflows.Client signs submissions
// and cancels; send sends it as it is.
func (h *reviewHarness) update(name string, arg any) *reply {
	switch in := arg.(type) {
	case task.SubmitInput:
		in.At = time.Now()
		in.Signature = decision.SignAnswer(testDecisionKey, reviewID, must(in.SignedAs()))
		arg = in
	case task.CancelInput:
		in.At = time.Now()
		in.Signature = decision.SignAnswer(testDecisionKey, reviewID, must(in.SignedAs()))
		arg = in
	}
	return h.send(name, arg)
}

func (h *reviewHarness) send(name string, arg any) *reply {
	r := &reply{}
	h.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   func(err error) { r.err, r.done = err, true },
		OnComplete: func(out any, err error) { r.out, r.err, r.done = out, err, true },
	}, arg)
	return r
}

func mustDecode(t *testing.T, v, out any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// TestAgentReviewRefusals: what the review does not expect is refused
// with the code an agent reads, a heartbeat of another role does not put
// the deadline off, and a record whose save failed is refused, not
// answered as taken.
func TestAgentReviewRefusals(t *testing.T) {
	t.Run("Codes", func(t *testing.T) {
		h := newReviewHarness(t)
		var result, reused *reply
		h.at(time.Minute, func() {
			req := h.request()
			ack := amp.NewAck(amp.RoleReviewer, req, t0)
			h.submit(ack)
			res := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, reviewID, t0.Add(time.Second), &amp.TaskResult{SubtaskID: "x", CompletionStatus: amp.StatusComplete,
				SelfAssessment: amp.SelfAssessment{CriteriaMet: []*bool{nil}, Notes: []string{}}, WorkLog: []amp.WorkLogEntry{}, DiffSummary: amp.DiffSummary{FilesChanged: []string{}}})
			result = h.submit(res)
			// A verdict, then another under its msg_id.
			v := verdictOf(t, req, amp.DecisionApproved, 0.9)
			h.submit(v)
			v.Verdict().Confidence = 0.95
			reused = h.submit(v)
		})
		h.run()
		result.refused(t, task.CodeInvalid) // from: the executor
		reused.refused(t, task.CodeConflict)
	})
	t.Run("OtherHeartbeats", func(t *testing.T) {
		h := newReviewHarness(t)
		h.at(time.Minute, func() { h.submit(amp.NewAck(amp.RoleReviewer, h.request(), t0)) })
		h.at(20*time.Minute, func() {
			h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Note: "not the reviewer"})
		})
		h.run()
		if d := h.env.Now().Sub(t0); d < 31*time.Minute || d > 32*time.Minute {
			t.Errorf("gave up after %s, want 30m after the ACK at 1m", d)
		}
	})
	t.Run("SaveFails", func(t *testing.T) {
		h := newReviewHarness(t)
		var v *reply
		h.at(time.Minute, func() {
			req := h.request()
			h.submit(amp.NewAck(amp.RoleReviewer, req, t0))
		})
		h.at(2*time.Minute, func() {
			h.mu.Lock()
			h.failSave = true
			h.mu.Unlock()
			v = h.submit(verdictOf(t, h.request(), amp.DecisionApproved, 0.9))
		})
		h.env.ExecuteWorkflow(AgentReviewWorkflow, h.in)
		if err := h.env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "conflict") {
			t.Errorf("the review ended with %v, want the failed save", err)
		}
		v.refused(t, task.CodeUnavailable)
	})
}

// TestAgentReviewUnsignedVerdict: the reviewer's verdict sent straight to
// Temporal, not signed as workflows.Client.Submit signs it, is refused as
// forbidden and the review goes on; the same verdict signed ends it.
func TestAgentReviewUnsignedVerdict(t *testing.T) {
	h := newReviewHarness(t)
	var raw, signed *reply
	h.at(time.Minute, func() { h.submit(amp.NewAck(amp.RoleReviewer, h.request(), t0.Add(time.Minute))) })
	h.at(2*time.Minute, func() {
		b, err := json.Marshal(verdictOf(t, h.request(), amp.DecisionApproved, 0.95))
		if err != nil {
			t.Fatal(err)
		}
		raw = h.send(task.UpdateSubmit, task.SubmitInput{Raw: b})
	})
	h.at(3*time.Minute, func() { signed = h.submit(verdictOf(t, h.request(), amp.DecisionApproved, 0.95)) })
	v := h.run()
	raw.refused(t, task.CodeForbidden)
	if !signed.done || signed.err != nil {
		t.Fatalf("the signed verdict: %v", signed.err)
	}
	if v.Verdict == nil || v.Verdict.Decision != amp.DecisionApproved {
		t.Errorf("returned %+v, want the signed verdict", v)
	}
}
