package aof

import (
	"slices"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TestLease: a dispatch takes the task's lease for its agent with the
// run's TTL, each heartbeat renews it, and the task leaving in_progress
// releases it, whether by the session's end or by a stale reclaim.
func TestLease(t *testing.T) {
	const key = "aof/" + testTask
	t.Run("SessionEnd", func(t *testing.T) {
		h := newHarness(t)
		var d *reply
		h.at(time.Second, func() { d = h.dispatch(time.Hour) })
		h.at(time.Minute, func() {
			tk := d.result(t).Task
			if tk.LeaseID != "L1."+key || tk.Run.Metadata["leaseId"] != tk.LeaseID {
				t.Errorf("lease %q run %+v", tk.LeaseID, tk.Run)
			}
			h.update(UpdateHeartbeat, HeartbeatInput{AgentID: agent})
		})
		h.at(2*time.Minute, func() { h.send(completion(OutcomePartial, t0), 0) })
		h.at(3*time.Minute, func() { h.update(UpdateSessionEnd, SessionEndInput{}) })
		h.at(4*time.Minute, func() {
			want := []string{"acquire " + key + " " + agent + " 1h0m0s", "renew L1." + key + " " + agent + " 1h0m0s", "release L1." + key + " " + agent + " 0s"}
			h.mu.Lock()
			got := slices.Clone(h.leases)
			h.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Errorf("lease steps %q, want %q", got, want)
			}
			if tk := h.task(); tk.Status != StatusReview || tk.LeaseID != "" {
				t.Errorf("status %s lease %q", tk.Status, tk.LeaseID)
			}
		})
		h.run()
	})
	t.Run("StaleReclaim", func(t *testing.T) {
		h := newHarness(t)
		h.at(time.Second, func() { h.dispatch(5 * time.Minute) })
		h.at(10*time.Minute, func() {
			h.mu.Lock()
			got := slices.Clone(h.leases)
			h.mu.Unlock()
			if len(got) != 2 || got[1] != "release L1."+key+" "+agent+" 0s" {
				t.Errorf("lease steps %q", got)
			}
			if tk := h.task(); tk.Status != StatusReady || tk.LeaseID != "" {
				t.Errorf("status %s lease %q", tk.Status, tk.LeaseID)
			}
		})
		h.run()
	})
	t.Run("HeldByAnother", func(t *testing.T) {
		h := newHarness(t)
		h.holder = "swe-qa"
		var d *reply
		h.at(time.Second, func() { d = h.dispatch(time.Hour) })
		h.at(time.Minute, func() {
			d.refused(t, CodeLeaseHeld)
			if tk := h.task(); tk.Status != StatusReady || tk.Run != nil || tk.Rev != 1 {
				t.Errorf("a refused dispatch changed the task: %s rev %d run %v", tk.Status, tk.Rev, tk.Run)
			}
		})
		h.run()
	})
}

// TestUnsignedDispatchAndSessionEnd: a dispatch or session end sent
// straight to Temporal, not signed with the decision key as Client signs
// it (or altered after), is refused as forbidden and changes nothing.
func TestUnsignedDispatchAndSessionEnd(t *testing.T) {
	h := newHarness(t)
	var raw, forged, rawEnd *reply
	h.at(time.Second, func() {
		raw = h.update(UpdateDispatch, DispatchInput{AgentID: agent, Signed: decision.Signed{Signature: "00"}})
		in := DispatchInput{AgentID: agent, Signed: decision.Signed{At: time.Now()}}
		in.Signature = decision.SignAnswer(testDecisionKey, WorkflowID(h.in.Task.TaskID), must(in.SignedAs()))
		in.AgentID = "swe-qa"
		forged = h.update(UpdateDispatch, in)
	})
	h.at(time.Minute, func() {
		raw.refused(t, task.CodeForbidden)
		forged.refused(t, task.CodeForbidden)
		if tk := h.task(); tk.Status != StatusReady || tk.Run != nil {
			t.Errorf("an unsigned dispatch changed the task: %s %+v", tk.Status, tk.Run)
		}
		h.dispatch(time.Hour)
	})
	h.at(2*time.Minute, func() { h.send(completion(OutcomePartial, t0), 0) })
	h.at(3*time.Minute, func() { rawEnd = h.update(UpdateSessionEnd, SessionEndInput{Signed: decision.Signed{Signature: "00"}}) })
	h.at(4*time.Minute, func() {
		rawEnd.refused(t, task.CodeForbidden)
		if tk := h.task(); tk.Status != StatusInProgress {
			t.Errorf("an unsigned session end changed the task: %s", tk.Status)
		}
		h.update(UpdateSessionEnd, SessionEndInput{})
	})
	h.at(5*time.Minute, func() {
		if tk := h.task(); tk.Status != StatusReview {
			t.Errorf("the signed session end was not taken: %s", tk.Status)
		}
	})
	h.run()
}

// TestUnsignedMessage: a status update sent straight to Temporal with no
// agent (which acts for every agent) or signed for one agent and renamed
// to another is refused as forbidden and changes nothing; signed as
// Client signs it, it is taken.
func TestUnsignedMessage(t *testing.T) {
	h := newHarness(t)
	status := func() Message {
		m := msg(TypeStatusUpdate, t0)
		m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Status: StatusBlocked, Blockers: []string{"x"}}
		return m
	}
	var raw, renamed, signed *reply
	h.at(time.Second, func() {
		raw = h.update(UpdateMessage, MessageInput{Message: status(), Signed: decision.Signed{Signature: "00", At: time.Now()}})
		in := MessageInput{Message: status(), Agent: "intruder", Signed: decision.Signed{At: time.Now()}}
		in.Signature = decision.SignAnswer(testDecisionKey, WorkflowID(h.in.Task.TaskID), must(in.SignedAs()))
		in.Agent = ""
		renamed = h.update(UpdateMessage, in)
	})
	h.at(time.Minute, func() {
		raw.refused(t, task.CodeForbidden)
		renamed.refused(t, task.CodeForbidden)
		if tk := h.task(); tk.Status != StatusReady || len(tk.WorkLog) != 0 {
			t.Errorf("an unsigned message changed the task: %s, work log %+v", tk.Status, tk.WorkLog)
		}
		signed = h.update(UpdateMessage, MessageInput{Message: status()})
	})
	h.at(2*time.Minute, func() {
		if res := signed.result(t); !res.Changed || res.Task.Status != StatusBlocked {
			t.Errorf("the signed status update was not taken: %+v", res)
		}
	})
	h.run()
}
