package aof

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func handoffMsg() Message {
	m := msg(TypeHandoffRequest, t0)
	m.Handoff = &HandoffRequest{TaskID: testTask, ParentTaskID: testParent, FromAgent: agent, ToAgent: "swe-qa",
		AcceptanceCriteria: []string{"All unit tests pass"}, ExpectedOutputs: []string{"tests/report.md"}, ContextRefs: []string{},
		Constraints: []string{"No new dependencies"}, DueBy: "2026-02-10T12:00:00.000Z"}
	return m
}

// TestHandoff covers examples 5–7 and the depth guard.
func TestHandoff(t *testing.T) {
	t.Run("Request", func(t *testing.T) {
		h := newHarness(t)
		var r, again *reply
		h.at(time.Second, func() { r = h.send(handoffMsg(), 0) })
		h.at(time.Minute, func() {
			tk := r.result(t).Task
			if tk.ParentTaskID != testParent || tk.Metadata.DelegationDepth != 1 || tk.Delegation != DelegationRequested {
				t.Errorf("child %+v", tk)
			}
			var hj HandoffRequest
			if !h.artifact(t, ArtifactHandoffJSON, &hj) || hj.ToAgent != "swe-qa" || hj.DueBy != "2026-02-10T12:00:00.000Z" {
				t.Errorf("handoff.json %+v", hj)
			}
			if md := h.artifacts[ArtifactHandoffMD].Body; !strings.HasPrefix(md, "# Handoff Request\n\n**From:** swe-backend\n**To:** swe-qa\n") {
				t.Errorf("handoff.md %q", md)
			}
			if len(h.eventsOf(EventDelegationRequest)) != 1 {
				t.Error("no delegation.requested")
			}
			again = h.send(handoffMsg(), 0)
		})
		h.at(2*time.Minute, func() {
			if again.result(t).Changed || len(h.eventsOf(EventDelegationRequest)) != 1 {
				t.Error("a re-sent handoff delegated twice")
			}
		})
		h.run()
	})
	t.Run("Nested", func(t *testing.T) {
		h := newHarness(t)
		var r *reply
		h.at(time.Second, func() { r = h.send(handoffMsg(), 1) })
		h.at(time.Minute, func() {
			r.refused(t, CodeNestedDelegation)
			if tk := h.task(); tk.Rev != 1 || tk.Handoff != nil {
				t.Errorf("a refused handoff changed the task: %+v", tk)
			}
		})
		h.run()
	})
	t.Run("Accepted", func(t *testing.T) {
		h := newHarness(t)
		var r *reply
		h.at(time.Second, func() { h.send(handoffMsg(), 0) })
		h.at(time.Minute, func() {
			m := msg(TypeHandoffAccepted, t0)
			m.Reply = &HandoffReply{TaskID: testTask, Accepted: true}
			r = h.send(m, 0)
		})
		h.at(2*time.Minute, func() {
			if tk := r.result(t).Task; tk.Status != StatusReady || tk.Delegation != DelegationAccepted {
				t.Errorf("accepted: %s %s", tk.Status, tk.Delegation)
			}
			if len(h.eventsOf(EventDelegationAccepted)) != 1 {
				t.Error("no delegation.accepted")
			}
		})
		h.run()
	})
	t.Run("Rejected", func(t *testing.T) {
		h := newHarness(t)
		var r *reply
		h.at(time.Second, func() { h.send(handoffMsg(), 0) })
		h.at(time.Minute, func() {
			m := msg(TypeHandoffRejected, t0)
			m.Reply = &HandoffReply{TaskID: testTask, Reason: "Insufficient context: no test plan provided"}
			r = h.send(m, 0)
		})
		h.at(2*time.Minute, func() {
			if tk := r.result(t).Task; tk.Status != StatusBlocked {
				t.Errorf("status %s", tk.Status)
			}
			if got := h.transitions(t); !slices.Equal(got, []string{"ready>blocked:Insufficient context: no test plan provided"}) {
				t.Errorf("transitions %v", got)
			}
			rej := h.eventsOf(EventDelegationRejected)
			if len(rej) != 1 || payloadOf(t, rej[0])["reason"] != "Insufficient context: no test plan provided" {
				t.Errorf("delegation.rejected %v", rej)
			}
		})
		h.run()
	})
	t.Run("Mismatch", func(t *testing.T) {
		h := newHarness(t)
		var r *reply
		h.at(time.Second, func() {
			m := handoffMsg()
			m.TaskID = "TASK-2026-02-09-099"
			r = h.send(m, 0)
		})
		h.at(time.Minute, func() { r.refused(t, CodeTaskIDMismatch) })
		h.run()
	})
}

func TestHandoffRejectedWhileRunning(t *testing.T) {
	h := newHarness(t)
	var r *reply
	h.at(time.Second, func() { h.dispatch(0) })
	h.at(time.Minute, func() {
		m := msg(TypeHandoffRejected, t0)
		m.Reply = &HandoffReply{TaskID: testTask, Reason: "no plan"}
		r = h.send(m, 0)
	})
	h.at(2*time.Minute, func() {
		if st := r.result(t).Task.Status; st != StatusBlocked {
			t.Errorf("status %s", st)
		}
	})
	h.run()
}

// TestHandoffReparentRefused: a child linked to a parent is not handed
// off again from another; the same parent's handoff still links it.
func TestHandoffReparentRefused(t *testing.T) {
	h := newHarness(t, func(tk *Task) { tk.ParentTaskID = testParent; tk.Metadata.DelegationDepth = 1 })
	var other, same *reply
	h.at(time.Second, func() {
		m := handoffMsg()
		m.Handoff.ParentTaskID = "TASK-2026-02-09-040"
		other = h.send(m, 0)
	})
	h.at(time.Minute, func() {
		other.refused(t, CodeParentConflict)
		if tk := h.task(); tk.ParentTaskID != testParent || tk.Handoff != nil || tk.Rev != 1 {
			t.Errorf("a refused re-parenting changed the task: %+v", tk)
		}
		same = h.send(handoffMsg(), 0)
	})
	h.at(2*time.Minute, func() {
		if tk := same.result(t).Task; tk.Handoff == nil || tk.Delegation != DelegationRequested {
			t.Errorf("the parent's own handoff: %+v", tk)
		}
	})
	h.run()
}
