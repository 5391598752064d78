package aof

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// TestReview answers the admins' review each way.
func TestReview(t *testing.T) {
	for _, c := range []struct {
		option, note string
		want         Status
	}{
		{decision.OptApprove, "", StatusDone},
		{OptSendBack, "add tests for auth", StatusReady},
		{OptBlock, "waiting on legal", StatusBlocked},
	} {
		t.Run(c.option, func(t *testing.T) {
			h := newHarness(t)
			var dec, stranger *reply
			h.at(time.Second, func() { h.dispatch(0) })
			h.at(time.Minute, func() { h.send(completion(OutcomeDone, t0), 0) })
			h.at(2*time.Minute, func() { h.update(UpdateSessionEnd, SessionEndInput{}) })
			h.at(3*time.Minute, func() {
				d := h.task().Review
				if d == nil {
					t.Fatal("no review decision")
				}
				stranger = h.update(task.UpdateDecide, decision.Answer{DecisionID: d.ID, Option: c.option, Note: c.note, By: "mallory", Digest: d.Digest})
				dec = h.update(task.UpdateDecide, decision.Answer{DecisionID: d.ID, Option: c.option, Note: c.note, By: "alice", Channel: "cli", Digest: d.Digest})
			})
			h.at(4*time.Minute, func() {
				stranger.refused(t, task.CodeForbidden)
				if !dec.done || dec.err != nil {
					t.Fatalf("decide: %v", dec.err)
				}
				if h.eventsOf(EventReviewDecided) == nil {
					t.Error("no review.decided")
				}
			})
			h.run()
			if c.want == StatusDone {
				if !h.env.IsWorkflowCompleted() {
					t.Error("an approved task's workflow did not end")
				}
				return
			}
			tk := h.task()
			if tk.Status != c.want || tk.Review != nil {
				t.Errorf("status %s review %+v", tk.Status, tk.Review)
			}
			if c.option == OptSendBack && (len(tk.WorkLog) != 1 || !strings.Contains(tk.WorkLog[0], "sent back by alice: add tests for auth")) {
				t.Errorf("work log %q", tk.WorkLog)
			}
			if last := h.saves[len(h.saves)-1]; len(last.Decisions) != 0 {
				t.Errorf("a closed review is still listed: %+v", last.Decisions)
			}
		})
	}
}

// TestReviewWithdrawn: a task leaving review otherwise (its agent
// rejects the handoff) withdraws the admins' question; the agent's status
// update alone does not take it out of review.
func TestReviewWithdrawn(t *testing.T) {
	h := newHarness(t)
	h.at(time.Second, func() { h.dispatch(0) })
	h.at(time.Minute, func() {
		m := msg(TypeStatusUpdate, t0)
		m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Status: StatusReview, Notes: "please look"}
		h.send(m, 0)
	})
	h.at(2*time.Minute, func() {
		if h.task().Review == nil {
			t.Fatal("no review decision")
		}
		m := msg(TypeStatusUpdate, t0)
		m.Status = &StatusUpdate{TaskID: testTask, AgentID: agent, Status: StatusBlocked, Notes: "found a bug"}
		h.send(m, 0)
	})
	h.at(3*time.Minute, func() {
		if tk := h.task(); tk.Status != StatusReview || tk.Review == nil {
			t.Fatalf("a status update took the task out of review: status %s review %v", tk.Status, tk.Review)
		}
		m := msg(TypeHandoffRejected, t0)
		m.Reply = &HandoffReply{TaskID: testTask, Reason: "found a bug"}
		h.send(m, 0)
	})
	h.at(4*time.Minute, func() {
		if tk := h.task(); tk.Status != StatusBlocked || tk.Review != nil {
			t.Errorf("status %s review %+v", tk.Status, tk.Review)
		}
	})
	h.run()
}

// TestReviewTimers: an unanswered review is reminded, escalated and at
// last expires into block, each step listed anew.
func TestReviewTimers(t *testing.T) {
	h := newHarness(t)
	h.policy.Decisions = decision.Policy{RemindAfter: time.Hour, EscalateAfter: 2 * time.Hour, ExpireAfter: 3 * time.Hour}
	h.at(time.Second, func() { h.dispatch(0) })
	h.at(time.Minute, func() { h.send(completion(OutcomeDone, t0), 0) })
	h.at(2*time.Minute, func() { h.update(UpdateSessionEnd, SessionEndInput{}) })
	h.at(2*time.Hour+3*time.Minute, func() {
		last := h.saves[len(h.saves)-1]
		if len(last.Decisions) != 1 {
			t.Fatalf("listed %+v", last.Decisions)
		}
		var d decision.Decision
		_ = json.Unmarshal(last.Decisions[0].Body, &d)
		if d.EscalatedAt.IsZero() || d.RemindedAt.IsZero() {
			t.Errorf("the listed review is not reminded and escalated: %+v", d)
		}
	})
	h.at(3*time.Hour+3*time.Minute, func() {
		tk := h.task()
		if tk.Status != StatusBlocked || tk.Review != nil {
			t.Errorf("status %s review %v after expiry", tk.Status, tk.Review)
		}
		if last := h.saves[len(h.saves)-1]; len(last.Decisions) != 0 {
			t.Errorf("an expired review is still listed")
		}
	})
	h.run()
}
