package workflows

import (
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

func TestHappyPathTwoSubtasks(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "T-2026-001-S1", "T-2026-001-S2"))
	var mid task.State
	end := h.round(0)
	h.at(end+500*time.Millisecond, func() { mid = h.state() })
	h.round(end + time.Second)
	res := h.run()

	if res.Status != task.StatusDone {
		t.Fatalf("status %s, want done (%s)", res.Status, res.Reason)
	}
	if res.Rounds != 2 || res.RejectCount != 0 {
		t.Errorf("rounds %d reject_count %d, want 2 and 0", res.Rounds, res.RejectCount)
	}
	if mid.SubtaskIndex != 1 || mid.Subtask == nil || mid.Subtask.SubtaskID != "T-2026-001-S2" {
		t.Errorf("after the first round the current subtask is %+v, want S2", mid.Subtask)
	}
	ds := h.deliveredOf(amp.TypeTaskDispatch)
	if len(ds) != 2 || ds[0].Dispatch().Subtasks[0].SubtaskID != "T-2026-001-S1" || ds[1].Dispatch().Subtasks[0].SubtaskID != "T-2026-001-S2" {
		t.Fatalf("dispatches %+v, want one per subtask in order", ds)
	}
	for _, d := range ds {
		if err := d.Validate(); err != nil {
			t.Errorf("dispatch %s is not valid AMP: %v", d.MsgID, err)
		}
	}
	rr := h.deliveredOf(amp.TypeReviewRequest)
	if len(rr) != 2 {
		t.Fatalf("%d review requests, want 2", len(rr))
	}
	req := rr[0].Request()
	if req.OriginalDispatchRef != ds[0].MsgID || req.ReviewScope != amp.ScopeFull || req.DiffURL == "" || req.CIStatus["state"] != "passed" {
		t.Errorf("review request %+v does not point at the round", req)
	}
	if err := rr[0].Validate(); err != nil {
		t.Errorf("review request is not valid AMP: %v", err)
	}
	for id, n := range h.recordIDs() {
		if n > 1 {
			t.Errorf("record %s written %d times", id, n)
		}
	}
	ids := h.recordIDs()
	for _, id := range res.MsgIDs {
		if ids[id] != 1 {
			t.Errorf("message %s of the result is not in the SSOT", id)
		}
	}
	if len(h.recordedMessages(amp.TypeTaskResult)) != 2 || len(h.recordedMessages(amp.TypeReviewVerdict)) != 2 {
		t.Errorf("results and verdicts not all recorded")
	}
	acks := 0
	for _, r := range h.records {
		if r.Kind == ssot.KindAck {
			acks++
		}
	}
	// executor and reviewer ACK twice each; ampflow ACKs each result and verdict.
	if acks != 8 {
		t.Errorf("%d ACK records, want 8", acks)
	}
	for _, r := range h.replies {
		accepted(t, r)
	}
	if !strings.HasPrefix(res.MsgIDs[0], "task_dispatch-"+testTaskID+"-") {
		t.Errorf("first message %s is not the dispatch", res.MsgIDs[0])
	}
}

// escalations returns the escalations recorded in the SSOT.
func (h *harness) escalations() []*amp.Escalation {
	var out []*amp.Escalation
	for _, m := range h.recordedMessages(amp.TypeEscalation) {
		out = append(out, m.Escalation())
	}
	return out
}

func TestAckTimeout(t *testing.T) {
	t.Run("Redispatched", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		var pending task.State
		h.at(301*time.Second, func() {
			pending = h.state()
			h.decide("alice", task.OptRedispatch, "")
		})
		h.round(302 * time.Second)
		res := h.run()

		if res.Status != task.StatusDone {
			t.Fatalf("status %s, want done", res.Status)
		}
		if pending.Pending == nil || pending.Pending.Kind != task.KindAckTimeout {
			t.Fatalf("pending decision %+v, want ack_timeout", pending.Pending)
		}
		if got := pending.Pending.RaisedAt.Sub(pending.StartedAt); got != 300*time.Second {
			t.Errorf("ack_timeout raised after %s, want 300s", got)
		}
		if pending.Status != task.StatusAwaitingAdmin || pending.WaitingFor != task.KindAckTimeout || pending.UnderlyingStatus != task.StatusDispatched {
			t.Errorf("status during the decision %s, waiting for %q over %q; want awaiting_admin, ack_timeout over dispatched (a warning does not suspend)",
				pending.Status, pending.WaitingFor, pending.UnderlyingStatus)
		}
		esc := h.escalations()
		if len(esc) != 1 || esc[0].EscalationType != amp.EscAckTimeout || esc[0].Severity != amp.SeverityWarning || esc[0].AutoSuspended {
			t.Fatalf("escalations %+v, want one ack_timeout warning, not suspended", esc)
		}
		if pending.Pending.Escalation == nil || pending.Pending.Escalation.Escalation().AffectedMsgs[0] != h.deliveredOf(amp.TypeTaskDispatch)[0].MsgID {
			t.Errorf("the escalation does not name the unACKed dispatch")
		}
		if n := len(h.deliveredOf(amp.TypeTaskDispatch)); n != 2 || res.Rounds != 2 {
			t.Errorf("%d dispatches, %d rounds; want 2 after a redispatch", n, res.Rounds)
		}
	})
	t.Run("MessageOwnTimeout", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) {
			in.Policy.AckTimeouts = map[amp.Type]time.Duration{amp.TypeTaskDispatch: 45 * time.Second}
		})
		var st task.State
		h.at(46*time.Second, func() { st = h.state(); h.decide("alice", task.OptTerminate, "") })
		res := h.run()
		if st.Pending == nil || st.Pending.RaisedAt.Sub(st.StartedAt) != 45*time.Second {
			t.Errorf("with protocol.ack_timeout.task_dispatch 45s the decision is %+v", st.Pending)
		}
		if d := h.deliveredOf(amp.TypeTaskDispatch)[0]; d.AckTimeoutSec == nil || *d.AckTimeoutSec != 45 {
			t.Errorf("dispatch ack_timeout_sec %v, want 45", d.AckTimeoutSec)
		}
		if res.Status != task.StatusTerminated || !strings.Contains(res.Reason, "alice") {
			t.Errorf("result %s %q, want terminated by alice", res.Status, res.Reason)
		}
	})
}

func TestLateAck(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var before, after task.State
	var stale *reply
	h.at(350*time.Second, func() { before = h.state(); h.ack(amp.RoleExecutor) })
	h.at(351*time.Second, func() {
		after = h.state()
		stale = h.update(task.UpdateDecide, "", decision.Answer{DecisionID: before.Pending.ID, Digest: before.Pending.Digest, Option: task.OptWait, By: "alice", Channel: "slack"})
	})
	h.at(352*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(353*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(354*time.Second, func() { h.verdict(amp.DecisionApproved, 0.9) })
	res := h.run()

	if res.Status != task.StatusDone || res.Rounds != 1 {
		t.Fatalf("result %s after %d rounds, want done after 1", res.Status, res.Rounds)
	}
	if before.Pending == nil || before.Pending.Kind != task.KindAckTimeout {
		t.Fatalf("no ack_timeout decision before the late ACK")
	}
	if after.Status != task.StatusInProgress || after.Pending != nil {
		t.Errorf("after the late ACK: status %s, pending %v; want in_progress, none", after.Status, after.Pending)
	}
	refused(t, stale, task.CodeStaleDecision)
	if !strings.Contains(stale.err.Error(), "withdrawn") {
		t.Errorf("late decision error %q does not say it was withdrawn", stale.err)
	}
}

func TestHeartbeatTimeout(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(10*time.Minute, func() {
		h.env.SignalWorkflow(task.SignalHeartbeat, task.HeartbeatInput{From: amp.RoleExecutor, Note: "compiling"})
	})
	var quiet, st task.State
	h.at(39*time.Minute, func() { quiet = h.state() })
	h.at(41*time.Minute, func() { st = h.state(); h.decide("bob", task.OptTerminate, "executor is gone") })
	res := h.run()

	if quiet.Pending != nil {
		t.Errorf("decision raised before 30 minutes of silence: %+v", quiet.Pending)
	}
	if st.Pending == nil || st.Pending.Kind != task.KindHeartbeatTimeout {
		t.Fatalf("pending %+v, want heartbeat_timeout", st.Pending)
	}
	if got := st.Pending.RaisedAt.Sub(st.StartedAt); got != 40*time.Minute {
		t.Errorf("heartbeat_timeout raised at +%s, want +40m (heartbeat at 10m + 30m)", got)
	}
	esc := h.escalations()
	if len(esc) != 1 || esc[0].EscalationType != amp.EscHeartbeatTimeout || esc[0].Severity != amp.SeverityWarning {
		t.Errorf("escalations %+v, want one heartbeat_timeout warning", esc)
	}
	if res.Status != task.StatusTerminated || !strings.Contains(res.Reason, "executor is gone") {
		t.Errorf("result %s %q", res.Status, res.Reason)
	}
	var beats int
	for _, e := range st.Timeline {
		if e.Kind == "heartbeat" && e.Note == "compiling" {
			beats++
		}
	}
	if beats != 1 {
		t.Errorf("heartbeat not in the timeline")
	}
}

func TestPartialResultAccepted(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var st task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.result(amp.StatusPartial, "simulator unavailable") })
	h.at(3*time.Second, func() { st = h.state(); h.decide("alice", task.OptAccept, "") })
	res := h.run()

	if st.Status != task.StatusAwaitingAdmin || st.Pending == nil || st.Pending.Kind != task.KindPartialResult {
		t.Fatalf("after a partial result: %s, pending %+v", st.Status, st.Pending)
	}
	if len(st.Pending.Context.Blockers) != 1 || st.Pending.Context.Blockers[0] != "simulator unavailable" {
		t.Errorf("decision context %+v lacks the blockers", st.Pending.Context)
	}
	esc := h.escalations()
	if len(esc) != 1 || !strings.Contains(esc[0].Description, "simulator unavailable") || esc[0].Severity != amp.SeverityWarning {
		t.Errorf("escalation %+v does not carry the blockers", esc)
	}
	if res.Status != task.StatusDone || len(h.deliveredOf(amp.TypeReviewRequest)) != 0 {
		t.Errorf("accepted partial result: %s with %d review requests, want done and none", res.Status, len(h.deliveredOf(amp.TypeReviewRequest)))
	}
}

func TestCIFailedThenFixed(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.ci = func(n int) activities.CIStatusResult {
		switch n {
		case 1:
			return activities.CIStatusResult{State: activities.CIFailed, Failing: []string{"unit-tests"}}
		case 2:
			return activities.CIStatusResult{State: activities.CIPending}
		}
		return activities.CIStatusResult{State: activities.CIPassed, Checks: map[string]string{"unit-tests": "passed"}}
	}
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(4*time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(5*time.Second, func() { h.result(amp.StatusComplete) })
	// the second round's result waits one poll interval for pending CI.
	h.at(40*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(41*time.Second, func() { h.verdict(amp.DecisionApproved, 0.9) })
	res := h.run()

	ds := h.deliveredOf(amp.TypeTaskDispatch)
	if len(ds) != 2 {
		t.Fatalf("%d dispatches, want 2 (one CI fix round)", len(ds))
	}
	fix := ds[1]
	if !strings.Contains(fix.Dispatch().Description, "unit-tests") || !strings.Contains(fix.Dispatch().Description, "not a rejection") {
		t.Errorf("fix dispatch description %q does not name the failing check", fix.Dispatch().Description)
	}
	results := h.recordedMessages(amp.TypeTaskResult)
	if len(fix.ContextRef) != 1 || fix.ContextRef[0] != results[0].MsgID {
		t.Errorf("fix dispatch context_ref %v, want the failing result %s", fix.ContextRef, results[0].MsgID)
	}
	if res.Status != task.StatusDone || res.RejectCount != 0 || res.CIRounds != 1 {
		t.Errorf("result %+v, want done, reject_count 0, ci_rounds 1", res)
	}
	if h.ciCalls != 3 {
		t.Errorf("CI read %d times, want 3 (failed, pending, passed)", h.ciCalls)
	}
}

func TestCIRoundsExhausted(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.ci = func(int) activities.CIStatusResult {
		return activities.CIStatusResult{State: activities.CIFailed, Failing: []string{"lint"}}
	}
	for i := 0; i < 4; i++ {
		base := time.Duration(i) * 10 * time.Second
		h.at(base+time.Second, func() { h.ack(amp.RoleExecutor) })
		h.at(base+2*time.Second, func() { h.result(amp.StatusComplete) })
	}
	var st task.State
	var late *reply
	h.at(50*time.Second, func() {
		st = h.state()
		_, late = h.result(amp.StatusComplete)
	})
	h.at(51*time.Second, func() { h.decide("alice", task.OptTerminate, "") })
	res := h.run()

	if st.Status != task.StatusSuspended || st.Pending == nil || st.Pending.Kind != task.KindCIExhausted {
		t.Fatalf("after 4 CI failures: %s, pending %+v; want suspended on ci_exhausted", st.Status, st.Pending)
	}
	if st.CIRounds != 3 || len(h.deliveredOf(amp.TypeTaskDispatch)) != 4 {
		t.Errorf("ci_rounds %d, dispatches %d; want 3 fix rounds after the first dispatch", st.CIRounds, len(h.deliveredOf(amp.TypeTaskDispatch)))
	}
	esc := h.escalations()
	if len(esc) != 1 || esc[0].EscalationType != amp.EscCIFailure || esc[0].Severity != amp.SeverityCritical || !esc[0].AutoSuspended {
		t.Errorf("escalations %+v, want one critical ci_failure", esc)
	}
	refused(t, late, task.CodeSuspended)
	if res.Status != task.StatusTerminated {
		t.Errorf("status %s", res.Status)
	}
}

func TestLyingDiffSummaryFlagged(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
		return activities.CheckResultOutput{Commit: in.Commit, DiffURL: "/d.diff",
			Mismatches: []string{"lines_added: claimed 10, git shows 3"}}, nil
	}
	var st task.State
	end := h.round(0)
	h.at(end-time.Second, func() { st = h.state() })
	h.run()
	reqs := h.deliveredOf(amp.TypeReviewRequest)
	if len(reqs) != 1 || !strings.Contains(reqs[0].Request().CoordinatorNotes, "diff_summary does not match git: lines_added: claimed 10, git shows 3") {
		t.Fatalf("review request notes %q do not flag the mismatch", reqs[0].Request().CoordinatorNotes)
	}
	if len(st.DiffMismatches) != 1 {
		t.Errorf("state diff_mismatches %v, want the mismatch recorded on the task", st.DiffMismatches)
	}
}

func TestBranchViolationEscalates(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
		return activities.CheckResultOutput{Commit: in.Commit, Violation: "commit a3f8d21 is on main"}, nil
	}
	var st task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(3*time.Second, func() { st = h.state(); h.decide("alice", task.OptTerminate, "") })
	res := h.run()
	if st.Status != task.StatusSuspended || st.Pending == nil || st.Pending.Kind != task.KindBranchViolation {
		t.Fatalf("after a commit on main: %s, pending %+v", st.Status, st.Pending)
	}
	esc := h.escalations()
	if len(esc) != 1 || esc[0].EscalationType != amp.EscBranchViolation || esc[0].Severity != amp.SeverityCritical {
		t.Errorf("escalations %+v, want one critical branch_violation", esc)
	}
	if len(h.deliveredOf(amp.TypeReviewRequest)) != 0 || res.Status != task.StatusTerminated {
		t.Errorf("a violating result went on: %s", res.Status)
	}
}

// TestNoCommitSaysSo: a result whose branch head is still the base is
// refused as no commit, not as a commit on main.
func TestNoCommitSaysSo(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
		return activities.CheckResultOutput{Commit: in.Commit, NoCommit: true,
			Violation: "the executor made no commit on " + in.Branch + ": its head is still 05bc90c9"}, nil
	}
	var st task.State
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
	h.at(3*time.Second, func() { st = h.state(); h.decide("alice", task.OptTerminate, "") })
	h.run()
	if st.Pending == nil || !strings.Contains(st.Pending.Prompt, "No commit in") ||
		!strings.Contains(st.Pending.Prompt, "made no commit on") || strings.Contains(st.Pending.Prompt, "Branch violation") {
		t.Errorf("pending %+v, want the question to say no commit was made", st.Pending)
	}
}

func TestRefusedBranchDispatchesNothing(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	h.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
		return activities.CheckBranchResult{}, temporal.NewNonRetryableApplicationError("branch main of /repos/rhylm is protected", activities.ErrProtectedBranch, nil)
	}
	res, _ := h.runRefused()
	if res.Status != task.StatusTerminated || !strings.Contains(res.Reason, "protected") {
		t.Errorf("result %s %q, want terminated naming the protected branch", res.Status, res.Reason)
	}
	if n := len(h.deliveredOf(amp.TypeTaskDispatch)); n != 0 {
		t.Errorf("%d dispatches to a refused branch", n)
	}
}
