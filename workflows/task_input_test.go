package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

func TestDecisionsRefused(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
	var stale, notAdmin, noOption, second *reply
	var first *reply
	var decisionID, digest string
	h.at(time.Minute, func() {
		decisionID, digest = h.state().Pending.ID, h.state().Pending.Digest
		stale = h.update(task.UpdateDecide, "", decision.Answer{DecisionID: "T-2026-001-d99", Option: decision.OptApprove, By: "alice", Channel: "cli"})
		notAdmin = h.update(task.UpdateDecide, "", decision.Answer{DecisionID: decisionID, Digest: digest, Option: decision.OptApprove, By: "mallory", Channel: "slack"})
		noOption = h.update(task.UpdateDecide, "", decision.Answer{DecisionID: decisionID, Digest: digest, Option: task.OptWait, By: "alice", Channel: "cli"})
	})
	h.at(time.Minute+time.Second, func() {
		first = h.decide("alice", decision.OptApprove, "")
	})
	h.at(time.Minute+2*time.Second, func() {
		second = h.update(task.UpdateDecide, "", decision.Answer{DecisionID: decisionID, Digest: digest, Option: decision.OptReject, Note: "too late", By: "bob", Channel: "telegram"})
	})
	h.round(time.Minute + 2*time.Second)
	res := h.run()

	refused(t, stale, task.CodeStaleDecision)
	refused(t, notAdmin, task.CodeForbidden)
	refused(t, noOption, task.CodeInvalid)
	accepted(t, first)
	refused(t, second, task.CodeDecided)
	if second.err != nil && !strings.Contains(second.err.Error(), "already decided by alice via cli") {
		t.Errorf("late decision error %q does not say who decided", second.err)
	}
	if out, ok := first.out.(task.DecideResult); ok && out.Outcome.By != "alice" {
		t.Errorf("decide result %+v", out)
	}
	if res.Status != task.StatusDone {
		t.Errorf("status %s", res.Status)
	}
	// Every notice goes to the worker's notifier, which decides where it goes.
	var opened, closed int
	for _, n := range h.notices {
		if n.Decision != nil && n.Decision.ID == decisionID {
			switch n.Event {
			case notify.DecisionOpened:
				opened++
			case notify.DecisionClosed:
				closed++
				if n.Outcome == nil || n.Outcome.By != "alice" {
					t.Errorf("closing notice %+v does not say alice decided", n.Outcome)
				}
			}
		}
	}
	if opened != 1 || closed != 1 {
		t.Errorf("decision notices: %d opened, %d closed; want one each", opened, closed)
	}
}

func TestDuplicateMsgIDOneEffect(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var again, resent, conflict *reply
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() {
		m, _ := h.result(amp.StatusComplete)
		// the same update id: Temporal answers with the first outcome.
		again = h.submit(m, m.MsgID)
		// the same message under another update id, reformatted.
		b, _ := json.MarshalIndent(m, "", "  ")
		resent = h.submitRaw("retry-"+m.MsgID, b)
		// another message under the same msg_id.
		other := m
		r := *m.Result()
		r.DiffSummary.LinesAdded = 999
		other.Payload = &r
		conflict = h.submit(other, "conflict-"+m.MsgID)
	})
	h.at(3*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(4*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	res := h.run()

	accepted(t, again)
	accepted(t, resent)
	if out, ok := resent.out.(task.SubmitResult); !ok || !out.Duplicate {
		t.Errorf("resent message answered %+v, want duplicate", resent.out)
	}
	refused(t, conflict, task.CodeConflict)
	if n := len(h.recordedMessages(amp.TypeTaskResult)); n != 1 {
		t.Errorf("task_result recorded %d times, want once", n)
	}
	if res.Status != task.StatusDone || res.Rounds != 1 || len(h.deliveredOf(amp.TypeReviewRequest)) != 1 {
		t.Errorf("duplicates had an effect: %+v", res)
	}
}

func TestWrongStateRefused(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1", "S2"))
	var early, wrongSubtask, foreign, fromAgent, badAck, garbage, wrongAcker *reply
	h.at(500*time.Millisecond, func() {
		_, early = h.verdict(amp.DecisionApproved, 0.9)
		out := h.outboxTo(amp.RoleExecutor)
		a := amp.NewAck(amp.RoleReviewer, out, h.env.Now())
		wrongAcker = h.submit(a, a.MsgID)
	})
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() {
		good := h.resultMsg(amp.StatusComplete)
		r := *good.Result()
		r.SubtaskID = "S2"
		p := &r
		m := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, testTaskID, h.env.Now(), p)
		wrongSubtask = h.submit(m, m.MsgID)

		m2 := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, "T-2026-777", h.env.Now(), p)
		foreign = h.submit(m2, m2.MsgID)

		fromAgent = h.submit(amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, testTaskID, h.env.Now(), &h.in.Plan), "dispatch-from-outside")

		a := amp.Ack{MsgID: amp.MsgID(amp.AckPrefix, testTaskID, h.env.Now().Add(7*time.Millisecond)), ProtocolVersion: amp.ProtocolVersion,
			AckOf: amp.MsgID(amp.TypeReviewRequest, testTaskID, h.env.Now()), TaskID: testTaskID, From: amp.RoleReviewer,
			Timestamp: h.env.Now().Format(amp.TimestampLayout)}
		badAck = h.submit(a, a.MsgID)
		garbage = h.submitRaw("garbage", []byte(`{"msg_id": 42}`))
	})
	var before task.State
	h.at(1500*time.Millisecond, func() { before = h.state() })
	var after task.State
	h.at(2500*time.Millisecond, func() { after = h.state() })
	h.at(3*time.Second, func() { h.env.CancelWorkflow() })
	h.env.ExecuteWorkflow(Task, h.in)

	refused(t, early, task.CodeUnexpected)
	refused(t, wrongAcker, task.CodeInvalid)
	refused(t, wrongSubtask, task.CodeUnexpected)
	if wrongSubtask.err != nil && !strings.Contains(wrongSubtask.err.Error(), "expected a task_result for S1") {
		t.Errorf("error %q does not say what the task expected", wrongSubtask.err)
	}
	refused(t, foreign, task.CodeInvalid)
	refused(t, fromAgent, task.CodeUnexpected)
	refused(t, badAck, task.CodeUnexpected)
	if e := refused(t, garbage, task.CodeInvalid); e != nil && len(e.Fields) == 0 {
		t.Errorf("an invalid record's refusal names no field: %v", e)
	}
	if after.Status != before.Status || len(after.Timeline) != len(before.Timeline) {
		t.Errorf("refused messages changed the task: %s/%d → %s/%d", before.Status, len(before.Timeline), after.Status, len(after.Timeline))
	}
}

func TestCancel(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var noReason, ok *reply
	h.at(time.Second, func() {
		noReason = h.update(task.UpdateCancel, "", task.CancelInput{By: "planner"})
		ok = h.update(task.UpdateCancel, "", task.CancelInput{By: "planner", Reason: "superseded by T-2026-002"})
	})
	res := h.run()
	refused(t, noReason, task.CodeInvalid)
	accepted(t, ok)
	if res.Status != task.StatusTerminated || !strings.Contains(res.Reason, "superseded by T-2026-002") {
		t.Errorf("result %s %q", res.Status, res.Reason)
	}
}

func TestReplanWhileLocked(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Policy.MaxRejects = 1 })
	end := h.rejectRound(0)
	end = h.rejectRound(end + time.Second)
	var early *reply
	h.at(time.Millisecond*500, func() {
		early = h.update(task.UpdateReplan, "", task.ReplanInput{By: "planner", Subtasks: []amp.Subtask{{SubtaskID: "S1a", Description: "x"}}})
	})
	var bad, viaDecide, notAdmin *reply
	h.at(end+time.Second, func() {
		bad = h.update(task.UpdateReplan, "", task.ReplanInput{By: "planner", Subtasks: []amp.Subtask{{SubtaskID: "", Description: ""}}})
		viaDecide = h.decide("alice", task.OptReplan, "")
		notAdmin = h.update(task.UpdateReplan, "", task.ReplanInput{By: "planner", Subtasks: []amp.Subtask{{SubtaskID: "S9", Description: "x"}}})
		h.update(task.UpdateReplan, "", task.ReplanInput{By: "alice", Subtasks: []amp.Subtask{
			{SubtaskID: "S1a", Description: "first half", EstimatedLines: 20},
			{SubtaskID: "S1b", Description: "second half", EstimatedLines: 20},
		}})
	})
	end = h.round(end + time.Second)
	h.round(end)
	res := h.run()

	refused(t, early, task.CodeUnexpected)
	// The refusal names each failing field in its details, not in text
	// the client would parse back.
	if e := refused(t, bad, task.CodeInvalid); e != nil {
		want := []amp.FieldError{{Path: "subtasks[0].subtask_id", Problem: "required"}, {Path: "subtasks[0].description", Problem: "required"}}
		if !slices.Equal(e.Fields, want) {
			t.Errorf("fields %v, want %v", e.Fields, want)
		}
	}
	if e := refused(t, viaDecide, task.CodeInvalid); e != nil && (len(e.Fields) != 1 || e.Fields[0].Path != "option") {
		t.Errorf("fields %v, want option", e.Fields)
	}
	refused(t, notAdmin, task.CodeForbidden)
	ds := h.deliveredOf(amp.TypeTaskDispatch)
	if len(ds) != 4 || ds[2].Dispatch().Subtasks[0].SubtaskID != "S1a" || ds[3].Dispatch().Subtasks[0].SubtaskID != "S1b" {
		t.Fatalf("dispatches after replan: %d", len(ds))
	}
	if res.Status != task.StatusDone || res.RejectCount != 2 {
		t.Errorf("result %+v", res)
	}
}

func TestAgentCriticalEscalation(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	var st task.State
	var refusedWhile *reply
	h.at(time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() {
		m := amp.NewMessage(amp.RoleExecutor, amp.RoleAdmin, testTaskID, h.env.Now(), &amp.Escalation{
			EscalationType: amp.EscPermissionDenied, Severity: amp.SeverityCritical, TriggeredBy: amp.RoleExecutor,
			Description: "the task needs to edit Info.plist, which is forbidden", AffectedMsgs: []string{},
			SystemStateSnapshot: map[string]any{"task_status": "in_progress"}, AutoSuspended: true})
		h.submit(m, m.MsgID)
	})
	h.at(40*time.Minute, func() {
		st = h.state()
		_, refusedWhile = h.result(amp.StatusComplete)
	})
	h.at(41*time.Minute, func() { h.decide("alice", task.OptResume, "") })
	h.at(41*time.Minute+time.Second, func() { h.result(amp.StatusComplete) })
	h.at(41*time.Minute+2*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(41*time.Minute+3*time.Second, func() { h.verdict(amp.DecisionApproved, 0.9) })
	res := h.run()

	if st.Status != task.StatusSuspended || st.Pending == nil || st.Pending.Kind != task.KindAgentEscalation {
		t.Fatalf("after a critical escalation: %s, pending %+v", st.Status, st.Pending)
	}
	for _, d := range st.Decided {
		if d.Kind == task.KindHeartbeatTimeout {
			t.Errorf("heartbeat timer ran while suspended")
		}
	}
	refused(t, refusedWhile, task.CodeSuspended)
	if res.Status != task.StatusDone {
		t.Errorf("status %s", res.Status)
	}
}

// upserts keeps the status and reject count of each search-attribute
// upsert of h's run, in order.
func upserts(h *harness) *[]string {
	var seen []string
	h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		v, _ := sa.GetKeyword(task.AttrStatus)
		n, _ := sa.GetInt64(task.AttrRejectCount)
		seen = append(seen, fmt.Sprintf("%s/%d", v, n))
	}).Return(nil)
	return &seen
}

// TestSearchAttributesFollowStatus: AmpStatus changes when the task
// starts or stops waiting for a person; the agents' turns are
// dispatched, and cost no upsert unless the reject count moves; done is
// the workflow's completion, not an upsert.
func TestSearchAttributesFollowStatus(t *testing.T) {
	for _, tt := range []struct {
		name   string
		reject bool
		want   []string // status/reject count of each upsert
	}{
		{"Approved", false, []string{"awaiting_approval/0", "dispatched/0"}},
		{"RejectedOnce", true, []string{"awaiting_approval/0", "dispatched/0", "dispatched/1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, testPlan(amp.RiskMedium, "S1"))
			seen := upserts(h)
			h.at(time.Second, func() { h.decide("alice", decision.OptApprove, "") })
			start := time.Second
			if tt.reject {
				start = h.rejectRound(start)
			}
			h.round(start)
			if res := h.run(); res.Status != task.StatusDone {
				t.Fatalf("status %s", res.Status)
			}
			if strings.Join(*seen, ",") != strings.Join(tt.want, ",") {
				t.Errorf("upserts %v, want %v", *seen, tt.want)
			}
		})
	}
}

// TestStartStatus: a client whose policy approves the plan starts the
// task as dispatched, and the approved lifecycle then upserts nothing:
// its completion is its last visibility write; a worker whose policy
// asks an admin after all writes awaiting_approval before it asks.
func TestStartStatus(t *testing.T) {
	auto := NewPolicy(config.Default())
	if c := (&Client{Policy: &auto}); c.startStatus(task.Input{Plan: testPlan(amp.RiskLow, "S1")}) != task.StatusDispatched ||
		c.startStatus(task.Input{Plan: testPlan(amp.RiskMedium, "S1")}) != task.StatusAwaitingApproval ||
		c.startStatus(task.Input{Plan: testPlan(amp.RiskLow, "S1"), Handling: task.HandlingAdmin}) != task.StatusAwaitingApproval ||
		(&Client{}).startStatus(task.Input{Plan: testPlan(amp.RiskLow, "S1")}) != task.StatusAwaitingApproval {
		t.Fatal("startStatus: want dispatched only for a plan the client's policy approves")
	}
	for _, tt := range []struct {
		name string
		risk amp.Risk
		want []string
	}{
		{"Approved", amp.RiskLow, nil},
		{"WorkerAsks", amp.RiskMedium, []string{"awaiting_approval/0", "dispatched/0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, testPlan(tt.risk, "S1"))
			if err := h.env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(
				task.AttrStatus.ValueSet(string(task.StatusDispatched)), task.AttrRisk.ValueSet(string(tt.risk)),
				task.AttrRejectCount.ValueSet(0), task.AttrRepo.ValueSet(testPlan(tt.risk).Repo))); err != nil {
				t.Fatal(err)
			}
			seen := upserts(h)
			start := time.Duration(0)
			if tt.risk != amp.RiskLow {
				h.at(time.Second, func() { h.decide("alice", decision.OptApprove, "") })
				start = time.Second
			}
			h.round(start)
			if res := h.run(); res.Status != task.StatusDone {
				t.Fatalf("status %s", res.Status)
			}
			if strings.Join(*seen, ",") != strings.Join(tt.want, ",") {
				t.Errorf("upserts %v, want %v", *seen, tt.want)
			}
		})
	}
}

func TestSubmitUpdateID(t *testing.T) {
	m := amp.NewMessage(amp.RoleExecutor, amp.RoleCoordinator, testTaskID, time.Unix(1_800_000_000, 0), &amp.TaskResult{
		SubtaskID: "S1", CompletionStatus: amp.StatusComplete, WorkLog: []amp.WorkLogEntry{}})
	other := m
	r := *m.Result()
	r.CommitHash = "abcdef1"
	other.Payload = &r
	a, b := SubmitUpdateID(amp.Record{Message: &m}), SubmitUpdateID(amp.Record{Message: &other})
	if !strings.HasPrefix(a, m.MsgID+"#") || a == b {
		t.Errorf("update ids %q and %q: want the msg_id first and different ids for different content", a, b)
	}
	if again := SubmitUpdateID(amp.Record{Message: &m}); again != a {
		t.Errorf("the same record got %q then %q", a, again)
	}
}

// TestListStatusNotInVisibility: the statuses AmpStatus writes as
// dispatched are refused by Client.List, naming the field, before any call.
func TestListStatusNotInVisibility(t *testing.T) {
	for _, s := range []task.Status{task.StatusInProgress, task.StatusCICheck, task.StatusInReview, task.StatusRecovering} {
		_, err := (&Client{}).List(t.Context(), s, 0)
		var te *task.Error
		if !errors.As(err, &te) || te.Code != task.CodeInvalid || len(te.Fields) != 1 || te.Fields[0].Path != "status" {
			t.Errorf("List(%s) = %v, want an invalid status field", s, err)
		}
	}
	for _, s := range task.Statuses() {
		if got := task.AttrStatusOf(s); !got.Valid() || (got != s) != (s == task.StatusInProgress || s == task.StatusCICheck || s == task.StatusInReview || s == task.StatusRecovering) {
			t.Errorf("AttrStatusOf(%s) = %s", s, got)
		}
	}
}
