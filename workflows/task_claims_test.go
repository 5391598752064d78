package workflows

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// submitBy sends a record as the API does for a token named by.
func (h *harness) submitBy(by string, v any, id string) *reply {
	h.t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		h.t.Fatalf("encoding: %v", err)
	}
	return h.update(task.UpdateSubmit, id, task.SubmitInput{Raw: raw, By: by})
}

// ackBy has the agent by ACK, as role, the message msgID.
func (h *harness) ackBy(by string, role amp.Role, m amp.Message) *reply {
	a := amp.NewAck(role, m, h.env.Now())
	return h.submitBy(by, a, a.MsgID)
}

func (h *harness) resultBy(by string) (amp.Message, *reply) {
	m := h.resultMsg(amp.StatusComplete)
	return m, h.submitBy(by, m, m.MsgID)
}

func TestClaims(t *testing.T) {
	t.Run("Held", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		var dispatch amp.Message
		var first, second, secondAgain, secondResult, firstAgain *reply
		var held, answered task.State
		h.at(time.Second, func() {
			dispatch = h.outboxTo(amp.RoleExecutor)
			first = h.ackBy("exec-a", amp.RoleExecutor, dispatch)
		})
		h.at(2*time.Second, func() {
			second = h.ackBy("exec-b", amp.RoleExecutor, dispatch)
			held = h.state()
			h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Note: "mine too", By: "exec-b"})
		})
		h.at(2500*time.Millisecond, func() { firstAgain = h.ackBy("exec-a", amp.RoleExecutor, dispatch) })
		h.at(3*time.Second, func() { _, secondResult = h.resultBy("exec-b") })
		h.at(4*time.Second, func() { h.resultBy("exec-a") })
		h.at(4500*time.Millisecond, func() { secondAgain = h.ackBy("exec-b", amp.RoleExecutor, dispatch) })
		h.at(5*time.Second, func() { answered = h.state() })
		h.at(6*time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(7*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
		res := h.run()

		accepted(t, first)
		if e := refused(t, second, task.CodeClaimed); e != nil && !strings.Contains(e.Message, "exec-a") {
			t.Errorf("refusal %q does not name the holder exec-a", e.Message)
		}
		refused(t, secondResult, task.CodeClaimed)
		refused(t, secondAgain, task.CodeClaimed)
		accepted(t, firstAgain)
		if out, _ := firstAgain.out.(task.SubmitResult); !out.Duplicate {
			t.Errorf("the holder's ACK again: %+v, want a duplicate", firstAgain.out)
		}
		hd := task.HolderOf(held.Holders, amp.RoleExecutor)
		if hd == nil || hd.Agent != "exec-a" || hd.MsgID != dispatch.MsgID || hd.Unanswered == nil || hd.Unanswered.MsgID != dispatch.MsgID {
			t.Fatalf("holders after the ACK: %+v, want exec-a holding %s unanswered", held.Holders, dispatch.MsgID)
		}
		for _, e := range held.Timeline {
			if e.Kind == "heartbeat" {
				t.Errorf("exec-b's heartbeat reached the timeline: %+v", e)
			}
		}
		if hd := task.HolderOf(answered.Holders, amp.RoleExecutor); hd == nil || hd.Agent != "exec-a" || hd.Unanswered != nil {
			t.Errorf("holders after the result: %+v, want exec-a, answered", answered.Holders)
		}
		if res.Status != task.StatusDone {
			t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
		}
	})

	t.Run("HandedOnByRedispatch", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		h.at(time.Second, func() { h.ackBy("exec-a", amp.RoleExecutor, h.outboxTo(amp.RoleExecutor)) })
		h.at(2*time.Second, func() { h.resultBy("exec-a") })
		h.at(3*time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(4*time.Second, func() { h.verdict(amp.DecisionRejected, 0.95) })
		var redispatched task.State
		var taken *reply
		h.at(5*time.Second, func() {
			redispatched = h.state()
			taken = h.ackBy("exec-b", amp.RoleExecutor, h.outboxTo(amp.RoleExecutor))
		})
		var after task.State
		h.at(6*time.Second, func() { after = h.state() })
		h.at(7*time.Second, func() { h.resultBy("exec-b") })
		h.at(8*time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(9*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
		res := h.run()

		if task.HolderOf(redispatched.Holders, amp.RoleExecutor) != nil {
			t.Errorf("holders after the redispatch: %+v, want none for the executor", redispatched.Holders)
		}
		accepted(t, taken)
		if hd := task.HolderOf(after.Holders, amp.RoleExecutor); hd == nil || hd.Agent != "exec-b" {
			t.Errorf("holders after exec-b's ACK: %+v, want exec-b", after.Holders)
		}
		if res.Status != task.StatusDone {
			t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
		}
	})

	t.Run("HandedOnByRecovered", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		h.at(time.Second, func() { h.ackBy("exec-a", amp.RoleExecutor, h.outboxTo(amp.RoleExecutor)) })
		h.at(time.Minute, func() {
			h.heartbeat(task.HeartbeatInput{From: amp.RoleExecutor, Recovered: true, By: "exec-b"})
		})
		var taken *reply
		h.at(time.Minute+time.Second, func() { taken = h.ackBy("exec-b", amp.RoleExecutor, h.outboxTo(amp.RoleExecutor)) })
		h.at(time.Minute+2*time.Second, func() { h.resultBy("exec-b") })
		h.at(time.Minute+3*time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(time.Minute+4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
		res := h.run()

		accepted(t, taken)
		if len(h.deliveredOf(amp.TypeTaskDispatch)) != 2 {
			t.Errorf("dispatches %d, want 2 (sent again on recovery)", len(h.deliveredOf(amp.TypeTaskDispatch)))
		}
		if res.Status != task.StatusDone {
			t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
		}
	})

	t.Run("Unnamed", func(t *testing.T) {
		// Without a token (a worker's delivery, an open API) nobody
		// claims and nobody is refused.
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		h.at(time.Second, func() { h.ackBy("exec-a", amp.RoleExecutor, h.outboxTo(amp.RoleExecutor)) })
		var anon *reply
		h.at(2*time.Second, func() { _, anon = h.result(amp.StatusComplete) })
		h.at(3*time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
		res := h.run()
		accepted(t, anon)
		if res.Status != task.StatusDone {
			t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
		}
	})
}

// TestResultChecked: the state names the result whose git check
// DiffMismatches reports, and the answer to the task_result, given once
// that check is done, carries them as its warnings.
func TestResultChecked(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
		return activities.CheckResultOutput{Commit: in.Commit, Actual: in.Claimed,
			Mismatches: []string{"lines_added: claimed 10, git shows 12", "files_changed: git also shows README.md"}}, nil
	}
	var res1 amp.Message
	var answer *reply
	var checked task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { res1, answer = h.result(amp.StatusComplete) })
	h.at(3*time.Second, func() { checked = h.state() })
	h.at(4*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(5*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	res := h.run()

	if checked.ResultChecked != res1.MsgID || len(checked.DiffMismatches) != 2 || !strings.Contains(checked.DiffMismatches[1], "README.md") {
		t.Errorf("checked %q with %q, want %s with the two differences", checked.ResultChecked, checked.DiffMismatches, res1.MsgID)
	}
	out, _ := answer.out.(task.SubmitResult)
	if !answer.done || answer.err != nil || out.MsgID != res1.MsgID || !slices.Equal(out.Warnings, checked.DiffMismatches) {
		t.Errorf("answer %+v (done %v, %v), want %s with the check's warnings %q", out, answer.done, answer.err, res1.MsgID, checked.DiffMismatches)
	}
	if res.Status != task.StatusDone {
		t.Fatalf("result %s (%s), want done", res.Status, res.Reason)
	}
}
