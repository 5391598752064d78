package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/ampflow/ampflow/activities"
	gateacts "github.com/ampflow/ampflow/activities/gate"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

type gateHarness struct {
	env       *testsuite.TestWorkflowEnvironment
	mu        sync.Mutex
	records   []string
	notices   []notify.Event
	saves     []gateacts.GateDecisionsInput
	resolved  []gateacts.GateResolveInput
	attempts  []gateacts.GateCallbackInput
	callbacks []string
	deliver   func(n int) gateacts.GateCallbackResult
}

func newGateHarness(t *testing.T, pol task.Policy) *gateHarness {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	h := &gateHarness{env: s.NewTestWorkflowEnvironment()}
	h.deliver = func(int) gateacts.GateCallbackResult {
		return gateacts.GateCallbackResult{Delivered: true, StatusCode: 200}
	}
	env := h.env
	env.RegisterWorkflow(Gate)
	env.RegisterActivity(&activities.Activities{DecisionKey: testDecisionKey})
	env.RegisterActivity(&gateacts.Gate{})
	env.OnActivity(acts.TaskPolicy, mock.Anything, mock.Anything).Return(activities.PolicyResult{Policy: pol}, nil)
	env.OnActivity(acts.Notify, mock.Anything, mock.Anything).Return(func(_ context.Context, in notify.Input) (notify.Result, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.notices = append(h.notices, in.Event)
		return notify.Result{}, nil
	})
	env.OnActivity(gacts.GateOpen, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(gacts.GateRecord, mock.Anything, mock.Anything).Return(func(_ context.Context, in gateacts.GateRecordInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, e := range in.Entries {
			h.records = append(h.records, e.ID)
		}
		return nil
	})
	env.OnActivity(gacts.GateDecisions, mock.Anything, mock.Anything).Return(func(_ context.Context, in gateacts.GateDecisionsInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.saves = append(h.saves, in)
		return nil
	})
	env.OnActivity(gacts.GateResolve, mock.Anything, mock.Anything).Return(func(_ context.Context, in gateacts.GateResolveInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.resolved = append(h.resolved, in)
		return nil
	})
	env.OnActivity(gacts.GateCallback, mock.Anything, mock.Anything).Return(func(_ context.Context, in gateacts.GateCallbackInput) (gateacts.GateCallbackResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.attempts = append(h.attempts, in)
		return h.deliver(len(h.attempts)), nil
	})
	env.OnActivity(gacts.GateCallbackState, mock.Anything, mock.Anything).Return(func(_ context.Context, in gateacts.GateCallbackStateInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.callbacks = append(h.callbacks, in.Callback)
		return nil
	})
	return h
}

func testPolicy() task.Policy {
	return task.Policy{Admins: []string{"alice", "bob"}, Decisions: decision.Policy{ExpireAfter: time.Hour}}
}

func signalInput() Input {
	return Input{GateID: "gate_1", Kind: KindSignal, RunID: "run-1", AgentID: "resume-tailor", ProjectID: "job-search",
		Summary: "Rewrote resume", ProposedAction: "Send to applicant", WebhookURL: "http://127.0.0.1:9/hook",
		Artifacts: []json.RawMessage{json.RawMessage(`{"type":"text","content":"x"}`)}}
}

func (h *gateHarness) state() State {
	v, err := h.env.QueryWorkflow(QueryState)
	if err != nil {
		panic(err)
	}
	var s State
	if err := v.Get(&s); err != nil {
		panic(err)
	}
	return s
}

// testDecisionKey is the decision key of the tests' worker.
var testDecisionKey = []byte(strings.Repeat("k", decision.MinKeySize))

// signed is a signed as workflows.Client.Decide signs every answer.
func signed(a decision.Answer, subject string) decision.Answer {
	a.At = time.Now()
	a.Signature = decision.SignAnswer(testDecisionKey, subject, a)
	return a
}

func (h *gateHarness) answer(option, by, digest string, out *error) {
	st := h.state()
	if digest == "" {
		digest = st.Decision.Digest
	}
	h.env.UpdateWorkflow(task.UpdateDecide, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {}, OnReject: func(err error) { *out = err }, OnComplete: func(_ any, err error) { *out = err },
	}, signed(decision.Answer{DecisionID: st.Decision.ID, Option: option, Digest: digest, By: by, Channel: "telegram"}, st.Decision.Subject))
}

// TestGateApproved: an admin approves; the gate is resolved in the store,
// the open decision is saved then cleared, and the signed callback is
// retried until the webhook takes it, each attempt numbered.
func TestGateApproved(t *testing.T) {
	h := newGateHarness(t, testPolicy())
	h.deliver = func(n int) gateacts.GateCallbackResult {
		if n < 3 {
			return gateacts.GateCallbackResult{StatusCode: 503, Error: "503 Service Unavailable"}
		}
		return gateacts.GateCallbackResult{Delivered: true, StatusCode: 200}
	}
	var stale, ok, late error
	h.env.RegisterDelayedCallback(func() {
		st := h.state()
		if st.Status != StatusPending || st.Decision == nil || st.Decision.Kind != DecisionSignal {
			t.Errorf("pending state %+v", st)
		} else if a := fmt.Sprint(st.Decision.Context.Extra["artifacts"]); a != "[text: x]" {
			t.Errorf("artifacts shown %s", a)
		}
		h.answer(decision.OptApprove, "alice", "beef", &stale)
		h.answer(decision.OptApprove, "alice", "", &ok)
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() { h.answer(decision.OptReject, "bob", "", &late) }, 2*time.Minute)
	h.env.ExecuteWorkflow(Gate, signalInput())
	if err := h.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var st State
	if err := h.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if stale == nil || ok != nil {
		t.Fatalf("stale digest: %v; answer: %v", stale, ok)
	}
	if st.Status != StatusApproved || st.ResolvedBy != "alice" || st.Callback.Status != CallbackDelivered || st.Callback.Attempts != 3 {
		t.Fatalf("state %+v", st)
	}
	if len(h.resolved) != 1 || h.resolved[0].Status != "approved" {
		t.Fatalf("resolved %+v", h.resolved)
	}
	for i, a := range h.attempts {
		if a.Attempt != i+1 {
			t.Fatalf("attempt %d numbered %d", i+1, a.Attempt)
		}
		var cb Callback
		if err := json.Unmarshal(a.Body, &cb); err != nil || cb.GateID != "gate_1" || cb.Status != StatusApproved || cb.RunID != "run-1" || cb.ResolvedBy != "alice" {
			t.Fatalf("callback %s %v", a.Body, err)
		}
		// Signed for its recipient: the activity is told whom.
		if a.AgentID != "resume-tailor" || a.RunID != "run-1" {
			t.Fatalf("callback for %q %q, want resume-tailor run-1", a.AgentID, a.RunID)
		}
	}
	if len(h.saves) < 2 || len(h.saves[0].Decisions) != 1 || len(h.saves[len(h.saves)-1].Decisions) != 0 {
		t.Fatalf("saves %+v", h.saves)
	}
	if h.notices[0] != notify.DecisionOpened || h.notices[len(h.notices)-1] != notify.DecisionClosed {
		t.Fatalf("notices %v", h.notices)
	}
	if h.records[0] != "gate_1-gate" || h.records[len(h.records)-1] != "gate_1-callback" {
		t.Fatalf("records %v", h.records)
	}
}

// TestGateExpiresRejected: nobody answers; the gate is rejected at
// expiry, and a callback refused for good is not retried.
func TestGateExpiresRejected(t *testing.T) {
	h := newGateHarness(t, testPolicy())
	h.deliver = func(int) gateacts.GateCallbackResult {
		return gateacts.GateCallbackResult{Final: true, StatusCode: 404, Error: "404 Not Found (not retried)"}
	}
	start := h.env.Now()
	h.env.ExecuteWorkflow(Gate, signalInput())
	var st State
	if err := h.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Status != StatusRejected || st.Outcome.Channel != decision.ChannelExpiry || st.ResolvedAt.Sub(start) < time.Hour {
		t.Fatalf("state %+v", st)
	}
	if st.Callback.Status != CallbackFailed || len(h.attempts) != 1 || h.callbacks[0] != CallbackFailed {
		t.Fatalf("callback %+v, attempts %d", st.Callback, len(h.attempts))
	}
}

// TestGateCallbackGivesUp: a webhook that never answers is retried with
// backoff until callback_for has passed, then the gate ends.
func TestGateCallbackGivesUp(t *testing.T) {
	h := newGateHarness(t, testPolicy())
	h.deliver = func(int) gateacts.GateCallbackResult {
		return gateacts.GateCallbackResult{Error: "connection refused"}
	}
	in := signalInput()
	in.CallbackFor = 2 * time.Hour
	h.env.RegisterDelayedCallback(func() {
		var err error
		h.answer(decision.OptReject, "bob", "", &err)
	}, time.Minute)
	h.env.ExecuteWorkflow(Gate, in)
	var st State
	if err := h.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if st.Status != StatusRejected || st.Callback.Status != CallbackFailed || st.Callback.Attempts < 5 || st.Callback.Attempts > 15 {
		t.Fatalf("state %+v", st.Callback)
	}
}

// TestGateContractQuorum: a contract gate of the catalog's severe level
// needs the high quorum; its decision names the contract, primitive and
// parameters.
func TestGateContractQuorum(t *testing.T) {
	pol := testPolicy()
	pol.Decisions.Quorum.High = 2
	h := newGateHarness(t, pol)
	in := Input{GateID: "gate_c", Kind: KindContract, AgentID: "deployer", Contract: &ContractRef{
		ID: "cnt_1", Primitive: "deploy.production", Parameters: map[string]any{"service": "web"}, Digest: "abc",
		Level: "severe", MinimumHandling: "human_required"}}
	var first, second error
	h.env.RegisterDelayedCallback(func() {
		st := h.state()
		x := st.Decision.Context.Extra
		if st.Decision.Kind != DecisionContract || x["contract_id"] != "cnt_1" || x["primitive"] != "deploy.production" || x["parameters"] == nil {
			t.Errorf("decision %+v", st.Decision)
		}
		h.answer(decision.OptApprove, "alice", "", &first)
	}, time.Minute)
	h.env.RegisterDelayedCallback(func() {
		if st := h.state(); st.Status != StatusPending {
			t.Errorf("one approval of two resolved the gate: %s", st.Status)
		}
		h.answer(decision.OptApprove, "bob", "", &second)
	}, 2*time.Minute)
	h.env.ExecuteWorkflow(Gate, in)
	var st State
	if err := h.env.GetWorkflowResult(&st); err != nil {
		t.Fatal(err)
	}
	if first != nil || second != nil || st.Status != StatusApproved || len(st.Outcome.Approvers) != 2 || len(h.attempts) != 0 {
		t.Fatalf("%v %v %+v", first, second, st)
	}
}

func TestArtifactFacts(t *testing.T) {
	long := strings.Repeat("é", MaxFactArtifact+10)
	many := make([]json.RawMessage, MaxFactArtifacts+2)
	for i := range many {
		many[i] = json.RawMessage(`"a"`)
	}
	tests := []struct {
		name string
		in   []json.RawMessage
		want []string
	}{
		{"Text", []json.RawMessage{json.RawMessage(`{"type":"text","content":"hello"}`)}, []string{"text: hello"}},
		{"Named", []json.RawMessage{json.RawMessage(`{"type":"file","name":"a.diff","content":{"lines":3}}`)}, []string{`file a.diff: {"lines":3}`}},
		{"Other", []json.RawMessage{json.RawMessage(`[1,2]`)}, []string{"[1,2]"}},
		{"Clipped", []json.RawMessage{json.RawMessage(`{"content":"` + long + `"}`)}, []string{strings.Repeat("é", MaxFactArtifact-1) + "…"}},
		{"Many", many, append(slices.Repeat([]string{`"a"`}, MaxFactArtifacts), "(2 more)")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ArtifactFacts(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRiskOf: a contract gate's quorum risk is the higher of its level's
// and its handling's, so the catalog's severe level and any
// human_required contract need the high quorum.

// TestRiskOf: a contract gate's quorum risk is the higher of its level's
// and its handling's, so the catalog's severe level and any
// human_required contract need the high quorum.
func TestRiskOf(t *testing.T) {
	for _, c := range []struct {
		level, handling string
		want            amp.Risk
	}{
		{"severe", "human_required", amp.RiskHigh},
		{"severe", "", amp.RiskHigh},
		{"critical", "human_required", amp.RiskHigh},
		{"high", "strict_confirm", amp.RiskHigh},
		{"moderate", "strict_confirm", amp.RiskMedium},
		{"low", "strict_confirm", amp.RiskMedium},
		{"none", "human_required", amp.RiskHigh},
		{"minimal", "log", amp.RiskLow},
		{"low", "allow", amp.RiskLow},
		{"Severe", "strict_confirm", amp.RiskHigh},
		{"catastrophic", "strict_confirm", amp.RiskMedium},
		{"catastrophic", "human_required", amp.RiskHigh},
	} {
		if got := riskOf(c.level, c.handling); got != c.want {
			t.Errorf("riskOf(%q, %q) = %s, want %s", c.level, c.handling, got, c.want)
		}
	}
}

func contractInput() Input {
	return Input{GateID: "gate_c", Kind: KindContract, AgentID: "deployer", Contract: &ContractRef{
		ID: "cnt_1", Primitive: "deploy.production", Parameters: map[string]any{"service": "web"}, Digest: "abc",
		Level: "critical", MinimumHandling: "human_required"}}
}

// TestGateExpiresWithContract: a contract gate's decision expires, and the
// gate is rejected, when the contract does, before the policy's
// expire_after; one that expired before the gate asked is rejected at
// once, with no decision raised.
func TestGateExpiresWithContract(t *testing.T) {
	t.Run("BeforePolicy", func(t *testing.T) {
		h := newGateHarness(t, testPolicy()) // expire_after 1h
		start := h.env.Now()
		in := contractInput()
		in.ExpiresAt = start.Add(15 * time.Minute)
		h.env.RegisterDelayedCallback(func() {
			if st := h.state(); st.Decision == nil || !st.Decision.ExpiresAt.Equal(in.ExpiresAt) {
				t.Errorf("open decision %+v, want it to expire at %s", st.Decision, in.ExpiresAt)
			}
		}, time.Minute)
		h.env.ExecuteWorkflow(Gate, in)
		var st State
		if err := h.env.GetWorkflowResult(&st); err != nil {
			t.Fatal(err)
		}
		if st.Status != StatusRejected || st.Outcome.Channel != decision.ChannelExpiry || st.ResolvedAt.Sub(start) != 15*time.Minute {
			t.Fatalf("state %+v, resolved after %s; want rejected at the contract's expiry, 15m", st, st.ResolvedAt.Sub(start))
		}
	})
	t.Run("PolicyFirst", func(t *testing.T) {
		h := newGateHarness(t, testPolicy())
		start := h.env.Now()
		in := contractInput()
		in.ExpiresAt = start.Add(3 * time.Hour)
		h.env.ExecuteWorkflow(Gate, in)
		var st State
		if err := h.env.GetWorkflowResult(&st); err != nil {
			t.Fatal(err)
		}
		if st.Status != StatusRejected || st.ResolvedAt.Sub(start) != time.Hour {
			t.Fatalf("state %+v, resolved after %s; want the policy's hour", st, st.ResolvedAt.Sub(start))
		}
	})
	t.Run("AlreadyExpired", func(t *testing.T) {
		h := newGateHarness(t, testPolicy())
		in := contractInput()
		in.ExpiresAt = h.env.Now().Add(-time.Second)
		h.env.ExecuteWorkflow(Gate, in)
		var st State
		if err := h.env.GetWorkflowResult(&st); err != nil {
			t.Fatal(err)
		}
		if st.Status != StatusRejected || st.Outcome.Channel != decision.ChannelExpiry || len(h.notices) != 0 {
			t.Fatalf("state %+v, notices %v; want rejected with no decision raised", st, h.notices)
		}
		if len(h.resolved) != 1 || h.resolved[0].Status != "rejected" {
			t.Fatalf("resolved %+v", h.resolved)
		}
		// The chain holds the outcome its status is read from.
		if want := []string{in.GateID + "-gate", in.GateID + "-outcome"}; !slices.Equal(h.records, want) {
			t.Fatalf("records %v, want %v", h.records, want)
		}
	})
}
