package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// continueAt runs h until a continue-as-new suggested at d, and returns a
// harness for the next run, starting where the first one stopped.
func continueAt(t *testing.T, h *harness, d time.Duration) *harness {
	t.Helper()
	h.at(d, func() {
		h.env.SetContinueAsNewSuggested(true)
		h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Note: "wake"})
	})
	h.env.ExecuteWorkflow(Task, h.in)
	var can *workflow.ContinueAsNewError
	if !errors.As(h.env.GetWorkflowError(), &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", h.env.GetWorkflowError())
	}
	next := newHarness(t, h.in.Plan)
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next.in); err != nil {
		t.Fatal(err)
	}
	next.env.SetStartTime(h.env.Now())
	return next
}

func TestContinueAsNewBeforeAnyACK(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
	var first task.State
	h.at(time.Second, func() { first = h.state() })
	h2 := continueAt(t, h, 2*time.Second)
	var st task.State
	h2.at(time.Second, func() {
		st = h2.state()
		h2.decide("alice", decision.OptApprove, "")
	})
	h2.round(time.Second)
	res := h2.run()
	if st.Pending == nil || first.Pending == nil || st.Pending.ID != first.Pending.ID {
		t.Errorf("the plan decision changed across continue-as-new: %+v → %+v", first.Pending, st.Pending)
	}
	if res.Status != task.StatusDone {
		t.Errorf("status %s", res.Status)
	}
	if n := len(h2.escalations()) + len(h.escalations()); n != 0 {
		t.Errorf("%d escalations, want none", n)
	}
}

func TestContinueAsNewDuringLock(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Policy.MaxRejects = 0 })
	end := h.rejectRound(0)
	h2 := continueAt(t, h, end+time.Second)
	h2.at(time.Second, func() { h2.decide("alice", decision.OptApprove, "") })
	res := h2.run()
	if res.Status != task.StatusDone || res.RejectCount != 1 {
		t.Errorf("result %+v, want done with reject_count 1", res)
	}
	locks := 0
	for _, e := range append(h.escalations(), h2.escalations()...) {
		if e.EscalationType == amp.EscHallucinationLock {
			locks++
		}
	}
	if locks != 1 {
		t.Errorf("%d hallucination_lock escalations across continue-as-new, want 1", locks)
	}
}

func TestImplicitACKKeepsCITimeout(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.ci = func(n int) activities.CIStatusResult {
		if n < 20 {
			return activities.CIStatusResult{State: activities.CIPending}
		}
		return activities.CIStatusResult{State: activities.CIPassed}
	}
	var st task.State
	h.at(time.Minute, func() { h.result(amp.StatusComplete) })
	h.at(9*time.Minute, func() { st = h.state() })
	h.at(12*time.Minute, func() { h.ack(amp.RoleReviewer) })
	h.at(12*time.Minute+time.Second, func() { h.verdict(amp.DecisionApproved, 0.9) })
	res := h.run()
	if st.Status != task.StatusCICheck || st.Pending != nil {
		t.Errorf("at 9m with CI pending (timeout 30m): %s, pending %+v", st.Status, st.Pending)
	}
	if res.Status != task.StatusDone {
		t.Errorf("status %s", res.Status)
	}
}

func TestReplyBeforeDecision(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var decided *reply
	h.at(301*time.Second, func() {
		h.result(amp.StatusComplete)
		decided = h.decide("alice", task.OptRedispatch, "")
	})
	h.at(302*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(303*time.Second, func() { h.verdict(amp.DecisionApproved, 0.9) })
	res := h.run()
	// The decision was withdrawn, not answered: stale, not decided.
	refused(t, decided, task.CodeStaleDecision)
	if res.Status != task.StatusDone || res.Rounds != 1 {
		t.Errorf("result %+v: the result withdraws the ack_timeout decision, one round", res)
	}
}

func TestReplanDuringApprovalAsksAgain(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
	var before, after task.State
	h.at(time.Second, func() {
		before = h.state()
		h.update(task.UpdateReplan, "", task.ReplanInput{By: "planner", Subtasks: []amp.Subtask{
			{SubtaskID: "S1", Description: "one", EstimatedLines: 1}, {SubtaskID: "S2", Description: "two", EstimatedLines: 1}}})
	})
	h.at(2*time.Second, func() { after = h.state(); h.decide("alice", decision.OptReject, "no") })
	h.run()
	if before.Pending == nil || after.Pending == nil || before.Pending.ID == after.Pending.ID {
		t.Fatalf("the plan decision was not asked again after a replan: %+v → %+v", before.Pending, after.Pending)
	}
	if !strings.Contains(after.Pending.Prompt, "2 subtasks") {
		t.Errorf("the new question %q does not describe the new plan", after.Pending.Prompt)
	}
}

func TestStaleResultRefused(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var first amp.Message
	var stale *reply
	h.at(time.Second, func() { first = h.outboxTo(amp.RoleExecutor) })
	h.at(301*time.Second, func() { h.decide("alice", task.OptRedispatch, "") })
	h.at(302*time.Second, func() {
		m := h.resultMsg(amp.StatusComplete)
		m.ContextRef = []string{first.MsgID}
		stale = h.submit(m, m.MsgID)
	})
	h.at(303*time.Second, func() { h.env.CancelWorkflow() })
	h.env.ExecuteWorkflow(Task, h.in)
	refused(t, stale, task.CodeUnexpected)
}

func TestCriticalEscalationWhileDecisionOpen(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var st task.State
	h.at(301*time.Second, func() {
		m := amp.NewMessage(amp.RoleExecutor, amp.RoleAdmin, testTaskID, h.env.Now(), &amp.Escalation{
			EscalationType: amp.EscConflict, Severity: amp.SeverityCritical, TriggeredBy: amp.RoleExecutor,
			Description: "stuck", AffectedMsgs: []string{}, SystemStateSnapshot: map[string]any{}, AutoSuspended: true})
		h.submit(m, m.MsgID)
	})
	h.at(302*time.Second, func() { st = h.state(); h.decide("alice", task.OptTerminate, "") })
	h.run()
	if st.Status != task.StatusSuspended || st.Pending == nil || st.Pending.Kind != task.KindAgentEscalation {
		t.Errorf("a critical escalation during an ack_timeout decision: %s, pending %+v", st.Status, st.Pending)
	}
}
