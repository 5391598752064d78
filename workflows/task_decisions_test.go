package workflows

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// noticesOf lists the notices of one event, in order; the decision each
// carries has its own stamps (RemindedAt, EscalatedAt) to say when.
func (h *harness) noticesOf(ev notify.Event) []notify.Input {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []notify.Input
	for _, n := range h.notices {
		if n.Event == ev {
			out = append(out, n)
		}
	}
	return out
}

func TestPlanQuorum(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskHigh, "S1"), func(in *task.Input) {
		in.Policy.Decisions.Quorum.High = 2
	})
	var first, twice, second *reply
	var mid task.State
	h.at(time.Minute, func() { first = h.decide("alice", decision.OptApprove, "") })
	h.at(2*time.Minute, func() { twice = h.decide("alice", decision.OptApprove, "") })
	h.at(3*time.Minute, func() { mid = h.state(); second = h.decide("bob", decision.OptApprove, "") })
	end := h.round(3 * time.Minute)
	var final task.State
	h.at(end+time.Second, func() { final = h.state(); h.decide("bob", decision.OptApprove, "") })
	h.at(end+2*time.Second, func() { h.decide("alice", decision.OptApprove, "") })
	res := h.run()

	if final.Pending == nil || final.Pending.Kind != task.KindFinalApproval || final.Pending.Required != 2 {
		t.Errorf("final approval %+v, want a quorum of 2", final.Pending)
	}
	accepted(t, first)
	out, _ := first.out.(task.DecideResult)
	if out.Decision == nil || out.Progress == nil || out.Progress.String() != "1 of 2 approvals: alice" || out.Outcome.DecisionID != "" {
		t.Errorf("the first of two approvals returned %+v; want the decision open, 1 of 2 approvals: alice", out)
	}
	accepted(t, twice)
	if out, _ := twice.out.(task.DecideResult); !strings.Contains(out.Note, "counted already") {
		t.Errorf("the same admin twice: %+v", out)
	}
	if mid.Status != task.StatusAwaitingApproval || mid.Pending == nil || len(mid.Pending.Approvals) != 1 || mid.Pending.Required != 2 {
		t.Errorf("between the approvals: %s, pending %+v", mid.Status, mid.Pending)
	}
	accepted(t, second)
	if out, _ := second.out.(task.DecideResult); len(out.Outcome.Approvers) != 2 || out.Outcome.Option != decision.OptApprove {
		t.Errorf("the quorum's closing answer returned %+v; want both approvers", out)
	}
	if n := len(h.noticesOf(notify.DecisionProgress)); n != 2 {
		t.Errorf("%d progress notices, want 2 (one per quorum)", n)
	}
	if res.Status != task.StatusDone {
		t.Errorf("status %s: %s", res.Status, res.Reason)
	}
}

func TestPlanDigest(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskMedium, "S1", "S2"))
	var before, after task.State
	var stale *reply
	h.at(time.Minute, func() {
		before = h.state()
		stale = h.update(task.UpdateDecide, "", decision.Answer{DecisionID: before.Pending.ID, Digest: "beef",
			Option: decision.OptApprove, By: "alice", Channel: "api"})
	})
	h.at(2*time.Minute, func() {
		after = h.state()
		h.decide("alice", decision.OptReject, "no")
	})
	res := h.run()

	want, err := decision.Digest(h.in.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if before.Pending.Digest != want || len(want) != 64 {
		t.Errorf("plan approval digest %s, want the plan's %s", before.Pending.Digest, want)
	}
	refused(t, stale, task.CodeStaleDecision)
	if stale.err != nil && !strings.Contains(stale.err.Error(), "digest: ") {
		t.Errorf("refusal %q does not name the digest", stale.err)
	}
	if after.Pending == nil || after.Pending.ID != before.Pending.ID || len(after.Decided) != 0 || after.Status != before.Status {
		t.Errorf("a stale digest changed the task: %+v", after)
	}
	if res.Status != task.StatusTerminated {
		t.Errorf("status %s", res.Status)
	}
}

// TestDecisionExpiry leaves each kind of decision unanswered: a reminder
// after 1h, the escalation group after 4h, then its on_expiry option,
// which ends the task.
func TestDecisionExpiry(t *testing.T) {
	for _, tc := range []struct {
		kind   decision.Kind
		plan   amp.TaskDispatch
		mutate func(*task.Input)
		play   func(h *harness)
		reason string
	}{
		{kind: task.KindPlanApproval, plan: testPlan(amp.RiskMedium, "S1"), reason: "plan rejected by ampflow via expiry: no answer within 24h"},
		{kind: task.KindAckTimeout, plan: testPlan(amp.RiskLow, "S1")},
		{kind: task.KindPartialResult, plan: testPlan(amp.RiskLow, "S1"), play: func(h *harness) {
			h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
			h.at(2*time.Second, func() { h.result(amp.StatusPartial, "the API is down") })
		}},
		{kind: task.KindLowConfidence, plan: testPlan(amp.RiskLow, "S1"), play: func(h *harness) {
			h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
			h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
			h.at(3*time.Second, func() { h.ack(amp.RoleReviewer) })
			h.at(4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.5) })
		}},
		{kind: task.KindHallucinationLock, plan: testPlan(amp.RiskLow, "S1"), mutate: func(in *task.Input) { in.Policy.MaxRejects = 1 },
			play: func(h *harness) {
				for i := range 2 {
					base := time.Duration(i) * 10 * time.Second
					h.at(base+time.Second, func() { h.ack(amp.RoleExecutor) })
					h.at(base+2*time.Second, func() { h.result(amp.StatusComplete) })
					h.at(base+3*time.Second, func() { h.ack(amp.RoleReviewer) })
					h.at(base+4*time.Second, func() { h.verdict(amp.DecisionRejected, 0.9) })
				}
			}},
		{kind: task.KindFinalApproval, plan: testPlan(amp.RiskLow, "S1"), mutate: func(in *task.Input) { in.Policy.FinalApproval.Low = task.HandlingAdmin },
			play: func(h *harness) { h.round(0) }},
		{kind: task.KindAgentEscalation, plan: testPlan(amp.RiskLow, "S1"), play: func(h *harness) {
			h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
			h.at(2*time.Second, func() {
				m := amp.NewMessage(amp.RoleExecutor, amp.RoleAdmin, testTaskID, h.env.Now(), &amp.Escalation{
					EscalationType: amp.EscPermissionDenied, Severity: amp.SeverityCritical, TriggeredBy: amp.RoleExecutor,
					Description: "needs to edit Info.plist", AffectedMsgs: []string{},
					SystemStateSnapshot: map[string]any{"task_status": "in_progress"}, AutoSuspended: true})
				h.submit(m, m.MsgID)
			})
		}},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			mutate := []func(*task.Input){}
			if tc.mutate != nil {
				mutate = append(mutate, tc.mutate)
			}
			h := newHarness(t, tc.plan, mutate...)
			if tc.play != nil {
				tc.play(h)
			}
			res := h.run()

			opened := h.noticesOf(notify.DecisionOpened)
			if len(opened) == 0 || opened[len(opened)-1].Decision.Kind != tc.kind {
				t.Fatalf("opened %d decisions, the last not %s", len(opened), tc.kind)
			}
			d := opened[len(opened)-1].Decision
			if want := expiryOption(tc.kind); d.OnExpiry != want || want == decision.OptApprove || d.ExpiresAt.Sub(d.RaisedAt) != 24*time.Hour {
				t.Errorf("decision %s: on_expiry %q expires %s after it was raised", d.ID, d.OnExpiry, d.ExpiresAt.Sub(d.RaisedAt))
			}
			rem, esc := h.noticesOf(notify.DecisionReminder), h.noticesOf(notify.DecisionEscalated)
			if len(rem) != 1 || rem[0].Decision.RemindedAt.Sub(d.RaisedAt) != time.Hour {
				t.Errorf("reminders %+v, want one after 1h", rem)
			}
			if len(esc) != 1 || esc[0].Decision.EscalatedAt.Sub(d.RaisedAt) != 4*time.Hour {
				t.Errorf("escalations %+v, want one after 4h", esc)
			}
			closed := h.noticesOf(notify.DecisionClosed)
			o := closed[len(closed)-1].Outcome
			if o.DecisionID != d.ID || o.Channel != decision.ChannelExpiry || o.By != decision.By || o.At.Sub(d.RaisedAt) != 24*time.Hour {
				t.Errorf("closed by %+v, want the expiry after 24h", o)
			}
			reason := tc.reason
			if reason == "" {
				reason = "terminated by ampflow via expiry: no answer within 24h"
			}
			if res.Status != task.StatusTerminated || res.Reason != reason {
				t.Errorf("result %s %q, want terminated %q", res.Status, res.Reason, reason)
			}
			ids := h.recordIDs()
			for _, id := range []string{d.ID, d.ID + "-reminder", d.ID + "-escalated", d.ID + "-outcome"} {
				if ids[id] != 1 {
					t.Errorf("SSOT record %s written %d times, want once", id, ids[id])
				}
			}
		})
	}
}

func TestEveryKindExpiresClosed(t *testing.T) {
	kinds := []decision.Kind{task.KindPlanApproval, task.KindAckTimeout, task.KindHeartbeatTimeout, task.KindPartialResult,
		task.KindCIExhausted, task.KindLowConfidence, task.KindHallucinationLock, task.KindBranchViolation,
		task.KindFinalApproval, task.KindResultProblem, task.KindAgentEscalation, task.KindDeliveryFailed, task.KindLeaseWait,
		task.KindMergeQueue}
	for _, k := range kinds {
		o, ok := expiryOptions[k]
		if !ok || o == decision.OptApprove || o == task.OptWait || o == task.OptAccept {
			t.Errorf("%s expires into %q (listed %v); want a closing option", k, o, ok)
		}
	}
	if len(expiryOptions) != len(kinds) {
		t.Errorf("the on_expiry table has %d kinds, the task raises %d", len(expiryOptions), len(kinds))
	}
}

func TestEscalationGroupDecidesOnceEscalated(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskMedium, "S1"), func(in *task.Input) {
		in.Policy.EscalationAdmins = []string{"carol"}
	})
	var early, late *reply
	h.at(time.Hour, func() { early = h.decide("carol", decision.OptApprove, "") })
	h.at(5*time.Hour, func() { late = h.decide("carol", decision.OptApprove, "") })
	h.round(5 * time.Hour)
	res := h.run()
	refused(t, early, task.CodeForbidden)
	accepted(t, late)
	if res.Status != task.StatusDone {
		t.Errorf("status %s", res.Status)
	}
}

// TestContinueAsNewWithDecisionOpen continues a task as new while its
// plan waits for approval, after the reminder: the next run escalates on
// time and does not remind again.
func TestContinueAsNewWithDecisionOpen(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
	h.at(2*time.Hour, func() {
		h.env.SetContinueAsNewSuggested(true)
		h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Note: "wake"})
	})
	h.env.ExecuteWorkflow(Task, h.in)
	var can *workflow.ContinueAsNewError
	if !errors.As(h.env.GetWorkflowError(), &can) {
		t.Fatalf("workflow ended with %v, want continue-as-new", h.env.GetWorkflowError())
	}
	var next task.Input
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if n := len(h.noticesOf(notify.DecisionReminder)); n != 1 {
		t.Fatalf("first run: %d reminders, want 1", n)
	}
	start := h.env.Now().Add(-2 * time.Hour)

	h2 := newHarness(t, testPlan(amp.RiskMedium, "S1"))
	h2.in = next
	h2.env.SetStartTime(h.env.Now())
	var st task.State
	h2.at(3*time.Hour, func() { st = h2.state(); h2.decide("alice", decision.OptApprove, "") })
	h2.round(3 * time.Hour)
	res := h2.run()

	if n := len(h2.noticesOf(notify.DecisionReminder)); n != 0 {
		t.Errorf("the new run reminded %d times, want none", n)
	}
	esc := h2.noticesOf(notify.DecisionEscalated)
	if len(esc) != 1 || esc[0].Decision.EscalatedAt.Sub(start) != 4*time.Hour {
		t.Errorf("escalations in the new run %+v, want one 4h after the decision", esc)
	}
	if st.Pending == nil || st.Pending.ID != testTaskID+"-d1" || st.Pending.EscalatedAt.IsZero() {
		t.Errorf("the carried decision: %+v", st.Pending)
	}
	if res.Status != task.StatusDone || !slices.ContainsFunc(res.MsgIDs, func(id string) bool { return strings.HasPrefix(id, "task_dispatch-") }) {
		t.Errorf("result %+v", res)
	}
}

func TestNewPolicyDecisions(t *testing.T) {
	cfg, err := config.LoadEnv(config.New(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Admins = []config.Admin{{Name: "alice", Slack: "U1", Telegram: "11"}, {Name: "bob"}}
	cfg.AdminsEscalation = []string{"carol"}
	cfg.Slack.AdminsEscalation = []string{"U9"}
	cfg.Telegram.AdminsEscalation = []string{"77"}
	cfg.Policy.Quorum.High = 2
	p := NewPolicy(cfg)
	want := decision.Policy{Quorum: decision.Quorum{Low: 1, Medium: 1, High: 2}, RemindAfter: time.Hour, EscalateAfter: 4 * time.Hour, ExpireAfter: 24 * time.Hour,
		Persons: map[string]string{"slack:U1": "alice", "telegram:11": "alice"}}
	if !reflect.DeepEqual(p.Decisions, want) {
		t.Errorf("decisions policy %+v, want %+v", p.Decisions, want)
	}
	if !slices.Equal(p.Admins, []string{"alice", "bob", "slack:U1", "telegram:11"}) {
		t.Errorf("admins %q: alice's channel identities are admins", p.Admins)
	}
	if !slices.Equal(p.EscalationAdmins, []string{"carol", "slack:U9", "telegram:77"}) {
		t.Errorf("escalation admins %q", p.EscalationAdmins)
	}
	if p.MayDecide("carol", false) || !p.MayDecide("carol", true) || !p.MayDecide("alice", false) || p.MayDecide("", true) {
		t.Errorf("MayDecide does not follow the escalation")
	}
}
