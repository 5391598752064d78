package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// rejectRound plays a round that the reviewer rejects.
func (h *harness) rejectRound(start time.Duration) time.Duration {
	h.at(start+1*time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(start+2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(start+3*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(start+4*time.Second, func() { h.verdict(amp.DecisionRejected, 0.95) })
	return start + 4*time.Second
}

func TestRejections(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var end time.Duration
	for i := 0; i < 4; i++ {
		end = h.rejectRound(time.Duration(i) * 10 * time.Second)
	}
	var locked task.State
	h.at(end+time.Second, func() { locked = h.state() })
	var noNote *reply
	h.at(end+2*time.Second, func() {
		noNote = h.decide("alice", task.OptRedispatch, "")
		h.decide("alice", task.OptRedispatch, "Hold the session in a property; see line 87")
	})
	h.round(end + 3*time.Second)
	res := h.run()

	if locked.Status != task.StatusLocked || locked.Pending == nil || locked.Pending.Kind != task.KindHallucinationLock {
		t.Fatalf("after 4 rejections: %s, pending %+v; want locked", locked.Status, locked.Pending)
	}
	esc := h.escalations()
	if len(esc) != 1 || esc[0].EscalationType != amp.EscHallucinationLock || esc[0].Severity != amp.SeverityCritical ||
		!esc[0].AutoSuspended || len(esc[0].SuggestedActions) == 0 || esc[0].SystemStateSnapshot["reject_count"] != float64(4) {
		t.Errorf("escalation %+v, want a critical hallucination_lock with suggested actions and reject_count 4", esc)
	}
	refused(t, noNote, task.CodeInvalid)
	reqs := h.deliveredOf(amp.TypeReviewRequest)
	if len(reqs) != 5 {
		t.Fatalf("%d review requests, want 5", len(reqs))
	}
	for i, r := range reqs {
		p := r.Request()
		if p.RejectCount != i {
			t.Errorf("request %d: reject_count %d, want %d", i, p.RejectCount, i)
		}
		warned := strings.Contains(p.CoordinatorNotes, "Lock is approaching")
		if warned != (i >= 2) {
			t.Errorf("request %d (reject_count %d): lock warning %v, want %v", i, p.RejectCount, warned, i >= 2)
		}
		wantScope := amp.ScopeIncremental
		if i == 0 {
			wantScope = amp.ScopeFull
		}
		if p.ReviewScope != wantScope {
			t.Errorf("request %d: scope %s, want %s", i, p.ReviewScope, wantScope)
		}
	}
	ds := h.deliveredOf(amp.TypeTaskDispatch)
	if len(ds) != 5 {
		t.Fatalf("%d dispatches, want 5", len(ds))
	}
	verdicts := h.recordedMessages(amp.TypeReviewVerdict)
	if !strings.Contains(ds[1].Dispatch().Description, "session released by ARC") || ds[1].ContextRef[0] != verdicts[0].MsgID {
		t.Errorf("redispatch after a rejection does not carry the verdict's issues: %q %v", ds[1].Dispatch().Description, ds[1].ContextRef)
	}
	if !strings.Contains(ds[4].Dispatch().Description, "Hold the session in a property") {
		t.Errorf("redispatch after the lock lacks the admin's guidance: %q", ds[4].Dispatch().Description)
	}
	if res.Status != task.StatusDone || res.RejectCount != 4 {
		t.Errorf("result %s with reject_count %d, want done with 4", res.Status, res.RejectCount)
	}
}

func TestLowConfidenceOverride(t *testing.T) {
	t.Run("Approved", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		var st task.State
		h.at(1*time.Second, func() { h.ack(amp.RoleExecutor) })
		h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
		h.at(3*time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(4*time.Second, func() { h.verdict(amp.DecisionRejected, 0.5) })
		h.at(5*time.Second, func() { st = h.state(); h.decide("bob", decision.OptApprove, "") })
		res := h.run()
		if st.Status != task.StatusAwaitingAdmin || st.Pending == nil || st.Pending.Kind != task.KindLowConfidence {
			t.Fatalf("low-confidence verdict: %s, pending %+v", st.Status, st.Pending)
		}
		if st.RejectCount != 0 {
			t.Errorf("the verdict took effect before the admin decided: reject_count %d", st.RejectCount)
		}
		if res.Status != task.StatusDone || res.RejectCount != 0 || res.Rounds != 1 {
			t.Errorf("override approve: %+v", res)
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		h.at(1*time.Second, func() { h.ack(amp.RoleExecutor) })
		h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
		h.at(3*time.Second, func() { h.ack(amp.RoleReviewer) })
		h.at(4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.6) })
		h.at(5*time.Second, func() { h.decide("bob", decision.OptReject, "tests are missing") })
		h.round(6 * time.Second)
		res := h.run()
		ds := h.deliveredOf(amp.TypeTaskDispatch)
		if res.Status != task.StatusDone || res.RejectCount != 1 || len(ds) != 2 {
			t.Fatalf("override reject: %+v with %d dispatches", res, len(ds))
		}
		if !strings.Contains(ds[1].Dispatch().Description, "tests are missing") {
			t.Errorf("the admin's reason is not in the redispatch: %q", ds[1].Dispatch().Description)
		}
	})
}

func TestPlanApproval(t *testing.T) {
	t.Run("Approved", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
		var st task.State
		var dispatchedEarly int
		h.at(time.Minute, func() {
			st = h.state()
			dispatchedEarly = len(h.deliveredOf(amp.TypeTaskDispatch))
			h.decide("alice", decision.OptApprove, "")
		})
		h.round(time.Minute)
		res := h.run()
		if st.Status != task.StatusAwaitingApproval || st.Pending == nil || st.Pending.Kind != task.KindPlanApproval {
			t.Fatalf("medium plan: %s, pending %+v", st.Status, st.Pending)
		}
		if dispatchedEarly != 0 {
			t.Errorf("%d dispatches before approval", dispatchedEarly)
		}
		if res.Status != task.StatusDone {
			t.Errorf("status %s", res.Status)
		}
	})
	t.Run("Rejected", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
		h.at(time.Minute, func() { h.decide("alice", decision.OptReject, "split it first") })
		res := h.run()
		if res.Status != task.StatusTerminated || !strings.Contains(res.Reason, "split it first") || !strings.Contains(res.Reason, "alice") {
			t.Errorf("result %s %q, want terminated with alice's reason", res.Status, res.Reason)
		}
		if n := len(h.deliveredOf(amp.TypeTaskDispatch)); n != 0 {
			t.Errorf("%d dispatches after a rejected plan", n)
		}
	})
	t.Run("StricterOnRequest", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Handling = task.HandlingAdmin })
		var st task.State
		h.at(time.Minute, func() { st = h.state(); h.decide("alice", decision.OptReject, "no") })
		h.run()
		if st.Pending == nil || st.Pending.Kind != task.KindPlanApproval {
			t.Errorf("a low-risk task with admin handling requested was not held for approval")
		}
	})
}

func TestFinalApprovalHighRisk(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskHigh, "S1"))
	h.at(time.Second, func() { h.decide("alice", decision.OptApprove, "") })
	end := h.round(time.Second)
	var st task.State
	h.at(end+time.Second, func() { st = h.state(); h.decide("bob", decision.OptApprove, "") })
	res := h.run()
	if st.Status != task.StatusAwaitingAdmin || st.Pending == nil || st.Pending.Kind != task.KindFinalApproval {
		t.Fatalf("before final approval: %s, pending %+v", st.Status, st.Pending)
	}
	if res.Status != task.StatusDone {
		t.Errorf("status %s", res.Status)
	}
	if len(st.Decided) != 1 || st.Decided[0].Kind != task.KindPlanApproval || st.Decided[0].By != "alice" {
		t.Errorf("decided %+v, want alice's plan approval", st.Decided)
	}
}

// TestSameCommitFlagged: a result on the commit the reviewer rejected
// last time is flagged in the next review_request; one on a new commit
// is not.
func TestSameCommitFlagged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		second  string // commit_hash of the result after the rejection
		flagged bool
	}{
		{"SameCommit", "a3f8d21", true},
		{"SameCommitInFull", "a3f8d21" + strings.Repeat("0", 33), true},
		{"NewCommit", "b41c9e0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testPlan(amp.RiskLow, "S1"))
			// git names the commit in full, as CheckResult does.
			h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
				full := in.Commit + strings.Repeat("0", 40-len(in.Commit))
				return activities.CheckResultOutput{Commit: full, Actual: in.Claimed, DiffURL: "/d.diff"}, nil
			}
			end := h.rejectRound(0)
			var st task.State
			h.at(end+1*time.Second, func() { h.ack(amp.RoleExecutor) })
			h.at(end+2*time.Second, func() {
				m := h.resultMsg(amp.StatusComplete)
				m.Result().CommitHash = tc.second
				h.submit(m, m.MsgID)
			})
			h.at(end+3*time.Second, func() { st = h.state(); h.ack(amp.RoleReviewer) })
			h.at(end+4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
			h.run()

			reqs := h.deliveredOf(amp.TypeReviewRequest)
			if len(reqs) != 2 {
				t.Fatalf("%d review requests, want 2", len(reqs))
			}
			if n := reqs[0].Request().CoordinatorNotes; strings.Contains(n, "no new commit") {
				t.Errorf("first request flagged %q; nothing was rejected yet", n)
			}
			notes := reqs[1].Request().CoordinatorNotes
			if got := strings.Contains(notes, "no new commit since the last rejection"); got != tc.flagged {
				t.Errorf("second request notes %q: flagged %v, want %v", notes, got, tc.flagged)
			}
			onTimeline := false
			for _, e := range st.Timeline {
				onTimeline = onTimeline || strings.Contains(e.Note, "no new commit since the last rejection")
			}
			if onTimeline != tc.flagged {
				t.Errorf("timeline flags the same commit: %v, want %v", onTimeline, tc.flagged)
			}
		})
	}
}

// TestFinalRedoSameCommitFlagged: after an admin sends the last subtask
// back at final approval, a result on the same commit is flagged to the
// reviewer as after a rejected review.
func TestFinalRedoSameCommitFlagged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		second  string
		flagged bool
	}{{"SameCommit", "", true}, {"NewCommit", "b41c9e0", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testPlan(amp.RiskHigh, "S1"))
			h.at(time.Second, func() { h.decide("alice", decision.OptApprove, "") })
			end := h.round(time.Second)
			h.at(end+1*time.Second, func() { h.decide("bob", task.OptRedispatch, "the greeting is wrong") })
			h.at(end+2*time.Second, func() { h.ack(amp.RoleExecutor) })
			h.at(end+3*time.Second, func() {
				m := h.resultMsg(amp.StatusComplete)
				if tc.second != "" {
					m.Result().CommitHash = tc.second
				}
				h.submit(m, m.MsgID)
			})
			h.at(end+4*time.Second, func() { h.ack(amp.RoleReviewer) })
			h.at(end+5*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
			h.at(end+6*time.Second, func() { h.decide("bob", decision.OptApprove, "") })
			h.run()
			reqs := h.deliveredOf(amp.TypeReviewRequest)
			if len(reqs) != 2 {
				t.Fatalf("%d review requests, want 2", len(reqs))
			}
			notes := reqs[1].Request().CoordinatorNotes
			if got := strings.Contains(notes, "no new commit since the last rejection"); got != tc.flagged {
				t.Errorf("review request after the redo: notes %q, flagged %v, want %v", notes, got, tc.flagged)
			}
		})
	}
}
