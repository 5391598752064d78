package decide

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

// probe is a workflow that embeds the engine the way a host does: its
// state (the engine's and the host's log of steps) is carried across
// continue-as-new, the answer update is the engine's, and it asks one
// question per round.
type probeInput struct {
	Subject  string
	Policy   decision.Policy
	Required int
	// Rounds is how many decisions to ask one after another (1 if zero).
	Rounds int
	// WithdrawAfter withdraws the open decision after this long.
	WithdrawAfter time.Duration
	// ContinueAfter continues as new after this long.
	ContinueAfter time.Duration
	Carried       *probeState
}

type probeState struct {
	Engine State `json:"engine"`
	// Log holds one line per host call: "record ID", "notify EVENT ID @ELAPSED".
	Log   []string  `json:"log"`
	Start time.Time `json:"start"`
	Round int       `json:"round"`
}

const (
	updateAnswer = "answer"
	queryState   = "state"
	testKind     = decision.Kind("plan_approval")
)

type probeHost struct{ s *probeState }

func (h probeHost) Record(ctx workflow.Context, id string, _ any) {
	h.s.Log = append(h.s.Log, "record "+id)
}

func (h probeHost) Notify(ctx workflow.Context, ev Event, d decision.Decision, o *decision.Outcome) {
	line := fmt.Sprintf("notify %s %s @%s", ev, d.ID, workflow.Now(ctx).Sub(h.s.Start))
	if o != nil {
		line += " " + o.Option + " by " + o.By + " via " + o.Channel
	}
	h.s.Log = append(h.s.Log, line)
}

func (h probeHost) MayDecide(by string, escalated bool) bool {
	return slices.Contains([]string{"alice", "bob", "carol", "slack:U123", "telegram:456"}, by) || escalated && by == "dave"
}

// plan is what the probe's decisions approve.
var plan = map[string]any{"description": "rework the timer", "subtasks": []string{"S1", "S2"}}

func probe(ctx workflow.Context, in probeInput) (probeState, error) {
	s := &probeState{Start: workflow.Now(ctx)}
	if in.Carried != nil {
		s = in.Carried
	}
	e := New(&s.Engine, in.Subject, &in.Policy, probeHost{s})
	if err := workflow.SetQueryHandler(ctx, queryState, func() (probeState, error) { return *s, nil }); err != nil {
		return *s, err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, updateAnswer, e.Answer,
		workflow.UpdateHandlerOptions{Validator: func(a decision.Answer) error { _, err := e.Check(a); return err }}); err != nil {
		return *s, err
	}
	e.Start(ctx)
	if in.WithdrawAfter > 0 {
		workflow.Go(ctx, func(ctx workflow.Context) {
			if workflow.Sleep(ctx, in.WithdrawAfter) == nil {
				e.Withdraw(ctx, "moot")
			}
		})
	}
	rounds := max(in.Rounds, 1)
	for s.Round < rounds {
		if e.Pending() == nil && !e.Answered(testKind) {
			if _, err := e.Raise(ctx, Request{Kind: testKind, Prompt: "Approve?", Approves: plan, Required: in.Required,
				Options:  []decision.Option{{ID: decision.OptApprove, Label: "Approve"}, {ID: decision.OptReject, Label: "Reject"}},
				OnExpiry: decision.OptReject}); err != nil {
				return *s, err
			}
		}
		cond := func() bool { return e.Answered(testKind) || e.Pending() == nil }
		if in.ContinueAfter > 0 {
			ok, err := workflow.AwaitWithTimeout(ctx, in.ContinueAfter-workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime), cond)
			if err != nil {
				return *s, err
			}
			if !ok {
				in.Carried, in.ContinueAfter = s, 0
				return *s, workflow.NewContinueAsNewError(ctx, probe, in)
			}
		} else if err := workflow.Await(ctx, cond); err != nil {
			return *s, err
		}
		e.Take(testKind)
		s.Round++
	}
	return *s, workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
}

type run struct {
	t   testing.TB
	env *testsuite.TestWorkflowEnvironment
}

func newRun(t testing.TB) *run {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(probe)
	env.RegisterActivity(&activities.Activities{DecisionKey: testKey})
	return &run{t: t, env: env}
}

// testKey is the decision key the tests' worker holds.
var testKey = []byte(strings.Repeat("k", decision.MinKeySize))

// signed is a signed the way workflows.Client.Decide signs it, now, for
// the subject its decision id names.
func signed(a decision.Answer) decision.Answer {
	a.At = time.Now()
	subject := a.DecisionID
	if i := strings.LastIndex(subject, "-d"); i >= 0 {
		subject = subject[:i]
	}
	a.Signature = decision.SignAnswer(testKey, subject, a)
	return a
}

func (r *run) at(d time.Duration, fn func()) { r.env.RegisterDelayedCallback(fn, d) }

func (r *run) state() probeState {
	r.t.Helper()
	v, err := r.env.QueryWorkflow(queryState)
	if err != nil {
		r.t.Fatalf("query: %v", err)
	}
	var s probeState
	if err := v.Get(&s); err != nil {
		r.t.Fatal(err)
	}
	return s
}

type answered struct {
	done  bool
	reply Reply
	err   error
}

// answer sends an answer to the open decision with its digest; mutate
// changes it first.
func (r *run) answer(by, option string, mutate ...func(*decision.Answer)) *answered {
	r.t.Helper()
	a := decision.Answer{Option: option, By: by, Channel: "cli"}
	if d := r.state().Engine.Open; d != nil {
		a.DecisionID, a.Digest = d.ID, d.Digest
	}
	for _, m := range mutate {
		m(&a)
	}
	return r.send(signed(a))
}

// send sends a as it is, signed or not.
func (r *run) send(a decision.Answer) *answered {
	out := &answered{}
	r.env.UpdateWorkflow(updateAnswer, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { out.err, out.done = err, true },
		OnComplete: func(v any, err error) {
			out.done, out.err = true, err
			if rep, ok := v.(Reply); ok {
				out.reply = rep
			}
		},
	}, a)
	return out
}

func (r *run) finish(in probeInput) probeState {
	r.t.Helper()
	r.env.ExecuteWorkflow(probe, in)
	if err := r.env.GetWorkflowError(); err != nil {
		r.t.Fatalf("workflow: %v", err)
	}
	var s probeState
	if err := r.env.GetWorkflowResult(&s); err != nil {
		r.t.Fatal(err)
	}
	return s
}

func refusedAs(t *testing.T, a *answered, code task.Code, contains string) {
	t.Helper()
	var app *temporal.ApplicationError
	if !a.done || !errors.As(a.err, &app) {
		t.Errorf("answer: done %v, error %v; want a %s refusal", a.done, a.err, code)
		return
	}
	if e, ok := refusal.Of(app); !ok || e.Code != code {
		t.Errorf("answer refused with %v (%+v); want a %s refusal", a.err, e, code)
		return
	}
	if !strings.Contains(app.Message(), contains) {
		t.Errorf("refusal %q does not say %q", app.Message(), contains)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func count(log []string, prefix string) int {
	n := 0
	for _, l := range log {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func TestQuorum(t *testing.T) {
	t.Run("TwoOfTwo", func(t *testing.T) {
		r := newRun(t)
		var first, again, second *answered
		var mid probeState
		r.at(time.Minute, func() { first = r.answer("alice", decision.OptApprove) })
		r.at(2*time.Minute, func() { again = r.answer("alice", decision.OptApprove) })
		r.at(3*time.Minute, func() { mid = r.state(); second = r.answer("bob", decision.OptApprove) })
		s := r.finish(probeInput{Subject: "T-1", Required: 2})

		if first.err != nil || first.reply.Outcome != nil || first.reply.Open == nil {
			t.Fatalf("the first approval: %+v, %v; want the decision still open", first.reply, first.err)
		}
		if p := first.reply.Open.Progress().String(); p != "1 of 2 approvals: alice" {
			t.Errorf("progress after the first approval: %q", p)
		}
		if again.err != nil || again.reply.Outcome != nil || !strings.Contains(again.reply.Note, "counted already") {
			t.Errorf("the same admin again: %+v, %v; want accepted, counted already", again.reply, again.err)
		}
		if n := len(mid.Engine.Open.Approvals); n != 1 {
			t.Errorf("approvals after alice twice: %d, want 1", n)
		}
		o := second.reply.Outcome
		if second.err != nil || o == nil || o.Option != decision.OptApprove {
			t.Fatalf("the second admin's approval: %+v, %v; want the decision approved", second.reply, second.err)
		}
		if len(o.Approvers) != 2 || o.Approvers[0].By != "alice" || o.Approvers[1].By != "bob" {
			t.Errorf("approvers %+v, want alice and bob", o.Approvers)
		}
		if count(s.Log, "notify progress") != 1 || count(s.Log, "record T-1-d1-approval-1") != 1 {
			t.Errorf("log %q: want one progress notice and one approval record", s.Log)
		}
		if s.Engine.Open != nil || len(s.Engine.Decided) != 1 {
			t.Errorf("engine %+v: want one decided, none open", s.Engine)
		}
	})
	t.Run("OnePersonTwoChannels", func(t *testing.T) {
		r := newRun(t)
		var slack, telegram, bob *answered
		r.at(time.Minute, func() { slack = r.answer("slack:U123", decision.OptApprove) })
		r.at(2*time.Minute, func() { telegram = r.answer("telegram:456", decision.OptApprove) })
		r.at(3*time.Minute, func() { bob = r.answer("bob", decision.OptApprove) })
		pol := decision.Policy{Persons: map[string]string{"slack:U123": "ana", "telegram:456": "ana"}}
		s := r.finish(probeInput{Subject: "T-1", Required: 2, Policy: pol})
		if slack.err != nil || slack.reply.Open == nil {
			t.Fatalf("ana on Slack: %+v, %v; want the decision still open", slack.reply, slack.err)
		}
		if telegram.err != nil || telegram.reply.Outcome != nil || !strings.Contains(telegram.reply.Note, "approval of ana was counted already") {
			t.Fatalf("ana again on Telegram: %+v, %v; want counted once", telegram.reply, telegram.err)
		}
		o := bob.reply.Outcome
		if bob.err != nil || o == nil || o.Option != decision.OptApprove || len(o.Approvers) != 2 {
			t.Fatalf("bob's approval: %+v, %v; want the quorum reached by ana and bob", bob.reply, bob.err)
		}
		if count(s.Log, "record T-1-d1-approval-") != 1 {
			t.Errorf("log %q: want one approval record before bob's", s.Log)
		}
	})
	t.Run("RejectByOne", func(t *testing.T) {
		r := newRun(t)
		var rej *answered
		r.at(time.Minute, func() { r.answer("alice", decision.OptApprove) })
		r.at(2*time.Minute, func() { rej = r.answer("bob", decision.OptReject) })
		s := r.finish(probeInput{Subject: "T-1", Required: 3})
		if rej.err != nil || rej.reply.Outcome == nil || rej.reply.Outcome.Option != decision.OptReject || rej.reply.Outcome.By != "bob" {
			t.Fatalf("a reject by one admin: %+v, %v; want it to decide", rej.reply, rej.err)
		}
		if s.Engine.Decided[0].At.Sub(s.Start) != 2*time.Minute {
			t.Errorf("decided at %s, want at once (2m)", s.Engine.Decided[0].At.Sub(s.Start))
		}
	})
}

func TestStaleAndDecided(t *testing.T) {
	r := newRun(t)
	var wrongDigest, noDigest, unknown, notAdmin, early, ok, second *answered
	var before, after probeState
	r.at(time.Minute, func() {
		before = r.state()
		wrongDigest = r.answer("alice", decision.OptApprove, func(a *decision.Answer) { a.Digest = strings.Repeat("0", 64) })
		noDigest = r.answer("alice", decision.OptApprove, func(a *decision.Answer) { a.Digest = "" })
		unknown = r.answer("alice", decision.OptApprove, func(a *decision.Answer) { a.DecisionID = "T-1-d7" })
		notAdmin = r.answer("mallory", decision.OptApprove)
		early = r.answer("dave", decision.OptApprove)
	})
	r.at(2*time.Minute, func() { after = r.state(); ok = r.answer("alice", decision.OptApprove) })
	r.at(3*time.Minute, func() {
		second = r.answer("bob", decision.OptReject, func(a *decision.Answer) {
			a.DecisionID, a.Digest, a.Channel = "T-1-d1", before.Engine.Open.Digest, "slack"
		})
	})
	r.at(4*time.Minute, func() { r.answer("alice", decision.OptApprove) })
	r.finish(probeInput{Subject: "T-1", Rounds: 2})

	refusedAs(t, wrongDigest, task.CodeStaleDecision, "digest: ")
	refusedAs(t, noDigest, task.CodeStaleDecision, "digest: required")
	refusedAs(t, unknown, task.CodeStaleDecision, "decision_id: unknown decision")
	refusedAs(t, notAdmin, task.CodeForbidden, `"mallory" is not a configured admin`)
	refusedAs(t, early, task.CodeForbidden, "escalation group")
	if b, a := jsonOf(t, before), jsonOf(t, after); b != a {
		t.Errorf("refused answers changed the state:\nbefore %+v\nafter  %+v", before, after)
	}
	if ok.err != nil || ok.reply.Outcome == nil {
		t.Fatalf("the right digest: %v", ok.err)
	}
	refusedAs(t, second, task.CodeDecided, "already decided by alice via cli at ")
}

func TestDecidedByQuorumNamesEveryApprover(t *testing.T) {
	r := newRun(t)
	var late *answered
	var id, dg string
	r.at(time.Minute, func() {
		d := r.state().Engine.Open
		id, dg = d.ID, d.Digest
		r.answer("alice", decision.OptApprove)
	})
	r.at(2*time.Minute, func() {
		r.env.UpdateWorkflow(updateAnswer, "", &testsuite.TestUpdateCallback{OnAccept: func() {}, OnReject: func(error) {}, OnComplete: func(any, error) {}}, signed(decision.Answer{DecisionID: id, Digest: dg, Option: decision.OptApprove, By: "bob", Channel: "slack"}))
	})
	r.at(3*time.Minute, func() {
		late = r.answer("carol", decision.OptReject, func(a *decision.Answer) { a.DecisionID, a.Digest = id, dg })
	})
	r.at(4*time.Minute, func() { r.answer("alice", decision.OptReject) })
	r.finish(probeInput{Subject: "T-1", Required: 2, Rounds: 2})
	refusedAs(t, late, task.CodeDecided, "alice via cli at ")
	if late.err != nil && !strings.Contains(late.err.Error(), "bob via slack at ") {
		t.Errorf("refusal %q does not name bob", late.err)
	}
}

func TestNobodyAnswers(t *testing.T) {
	pol := decision.Policy{RemindAfter: time.Hour, EscalateAfter: 4 * time.Hour, ExpireAfter: 24 * time.Hour}
	t.Run("RemindEscalateExpire", func(t *testing.T) {
		r := newRun(t)
		var atFive probeState
		var byEscalation *answered
		r.at(5*time.Hour, func() { atFive = r.state() })
		r.at(6*time.Hour, func() {
			// dave is in the escalation group: he may answer now, and rejects
			// nothing here; an unknown option shows he passed the admin check.
			byEscalation = r.answer("dave", "maybe")
		})
		s := r.finish(probeInput{Subject: "T-1", Policy: pol})

		want := []string{
			"record T-1-d1", "notify opened T-1-d1 @0s",
			"record T-1-d1-reminder", "notify reminded T-1-d1 @1h0m0s",
			"record T-1-d1-escalated", "notify escalated T-1-d1 @4h0m0s",
			"record T-1-d1-outcome", "notify closed T-1-d1 @24h0m0s reject by ampflow via expiry",
		}
		if !slices.Equal(s.Log, want) {
			t.Errorf("log\n%q\nwant\n%q", s.Log, want)
		}
		d := atFive.Engine.Open
		if d == nil || d.RemindedAt.Sub(s.Start) != time.Hour || d.EscalatedAt.Sub(s.Start) != 4*time.Hour || d.ExpiresAt.Sub(s.Start) != 24*time.Hour {
			t.Errorf("the open decision at 5h: %+v", d)
		}
		refusedAs(t, byEscalation, task.CodeInvalid, "option:")
		o := s.Engine.Decided[0]
		if o.Option != decision.OptReject || o.By != decision.By || o.Channel != decision.ChannelExpiry || o.Note != "no answer within 24h" {
			t.Errorf("expired into %+v", o)
		}
	})
	t.Run("NeverExpires", func(t *testing.T) {
		r := newRun(t)
		r.at(72*time.Hour, func() { r.answer("alice", decision.OptApprove) })
		s := r.finish(probeInput{Subject: "T-1", Policy: decision.Policy{RemindAfter: time.Hour}})
		if o := s.Engine.Decided[0]; o.Option != decision.OptApprove || o.By != "alice" || count(s.Log, "notify reminded") != 1 {
			t.Errorf("with expire_after 0: %+v, log %q", o, s.Log)
		}
	})
}

func TestWithdraw(t *testing.T) {
	r := newRun(t)
	var late *answered
	var d decision.Decision
	r.at(time.Minute, func() { d = *r.state().Engine.Open })
	r.at(3*time.Hour, func() {
		late = r.answer("alice", decision.OptApprove, func(a *decision.Answer) { a.DecisionID, a.Digest = d.ID, d.Digest })
	})
	r.at(3*time.Hour+time.Second, func() { r.answer("alice", decision.OptApprove) })
	s := r.finish(probeInput{Subject: "T-1", WithdrawAfter: 30 * time.Minute, Rounds: 2,
		Policy: decision.Policy{RemindAfter: time.Hour, ExpireAfter: 4 * time.Hour}})
	refusedAs(t, late, task.CodeStaleDecision, "was withdrawn")
	if count(s.Log, "notify reminded T-1-d1 ") != 0 || count(s.Log, "notify closed T-1-d1 ") != 1 || s.Engine.Decided[0].Option != decision.OptWithdrawn {
		t.Errorf("a withdrawn decision: log %q, decided %+v", s.Log, s.Engine.Decided)
	}
	// The next decision, opened at once, runs its own timers.
	if !slices.Contains(s.Log, "notify reminded T-1-d2 @1h30m0s") {
		t.Errorf("the next decision was not reminded at 1h30m: %q", s.Log)
	}
}

// TestContinueAsNewResumesTimers continues as new with a decision open
// after its reminder: the next run escalates and expires it on time, from
// RaisedAt, and does not remind again.
func TestContinueAsNewResumesTimers(t *testing.T) {
	pol := decision.Policy{RemindAfter: time.Hour, EscalateAfter: 4 * time.Hour, ExpireAfter: 24 * time.Hour}
	r := newRun(t)
	r.env.ExecuteWorkflow(probe, probeInput{Subject: "T-1", Policy: pol, ContinueAfter: 2 * time.Hour})
	var can *workflow.ContinueAsNewError
	if !errors.As(r.env.GetWorkflowError(), &can) {
		t.Fatalf("first run ended with %v, want continue-as-new", r.env.GetWorkflowError())
	}
	var next probeInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.Carried == nil || next.Carried.Engine.Open == nil || next.Carried.Engine.Open.RemindedAt.IsZero() {
		t.Fatalf("carried %+v: want the open decision, reminded", next.Carried)
	}
	start := next.Carried.Start

	r2 := newRun(t)
	r2.env.SetStartTime(start.Add(2 * time.Hour))
	s := r2.finish(next)
	if n := count(s.Log, "notify reminded"); n != 1 {
		t.Errorf("%d reminders over two runs, want 1: %q", n, s.Log)
	}
	if !slices.Contains(s.Log, "notify escalated T-1-d1 @4h0m0s") || !slices.Contains(s.Log, "notify closed T-1-d1 @24h0m0s reject by ampflow via expiry") {
		t.Errorf("the second run did not escalate at 4h and expire at 24h: %q", s.Log)
	}
}

func TestOpenRefusesApprovalOnExpiry(t *testing.T) {
	var s State
	e := New(&s, "T-1", &decision.Policy{}, probeHost{&probeState{}})
	for _, opt := range []string{"", decision.OptApprove} {
		var env testsuite.WorkflowTestSuite
		w := env.NewTestWorkflowEnvironment()
		w.ExecuteWorkflow(func(ctx workflow.Context) error {
			_, err := e.Raise(ctx, Request{Kind: testKind, Approves: plan, OnExpiry: opt})
			return err
		})
		if err := w.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "on_expiry") {
			t.Errorf("on_expiry %q: opened with %v", opt, err)
		}
	}
	if s.Open != nil || s.Seq != 0 {
		t.Errorf("a refused open left %+v", s)
	}
}

// BenchmarkDecisions opens, answers and lists decisions at virtual time:
// each iteration is one workflow that asks perRun questions one after
// another, each listed (the state query) and answered (the update). A
// bounded run keeps the growing history out of the figure.
func BenchmarkDecisions(b *testing.B) {
	const perRun = 20
	for b.Loop() {
		r := newRun(b)
		for i := range perRun {
			r.at(time.Duration(i+1)*time.Second, func() {
				v, err := r.env.QueryWorkflow(queryState)
				if err != nil {
					b.Fatal(err)
				}
				var s probeState
				if err := v.Get(&s); err != nil || s.Engine.Open == nil {
					b.Fatalf("listing: %v, open %v", err, s.Engine.Open)
				}
				d := s.Engine.Open
				r.env.UpdateWorkflow(updateAnswer, "", &testsuite.TestUpdateCallback{
					OnAccept: func() {}, OnReject: func(err error) { b.Fatal(err) }, OnComplete: func(any, error) {},
				}, signed(decision.Answer{DecisionID: d.ID, Digest: d.Digest, Option: decision.OptApprove, By: "alice", Channel: "cli"}))
			})
		}
		r.env.ExecuteWorkflow(probe, probeInput{Subject: "T-1", Rounds: perRun})
		if err := r.env.GetWorkflowError(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perRun), "ns/decision")
}
