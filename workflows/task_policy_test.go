package workflows

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// loosePolicy is what a coordinator's own configuration could send: no
// approvals, a decider of its choosing, no lock.
func loosePolicy() task.Policy {
	p := NewPolicy(config.Default())
	p.PlanApproval = task.RiskHandling{Low: task.HandlingAuto, Medium: task.HandlingAuto, High: task.HandlingAuto}
	p.FinalApproval = p.PlanApproval
	p.Admins = []string{"mallory"}
	p.MaxRejects = 100
	return p
}

// firstRecord returns the task's first SSOT record, decoded.
func (h *harness) firstRecord() (activities.RecordEntry, task.Input) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.records) == 0 {
		h.t.Fatal("nothing recorded")
	}
	var in task.Input
	if err := json.Unmarshal(h.records[0].Body, &in); err != nil {
		h.t.Fatalf("decoding the first record %s: %v", h.records[0].ID, err)
	}
	return h.records[0], in
}

// TestPolicyFromWorker checks that a task runs by the worker's policy,
// whatever the starting client sent, and records it first.
func TestPolicyFromWorker(t *testing.T) {
	worker := NewPolicy(config.Default())
	worker.Admins = []string{"alice"}

	t.Run("WorkerWins", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskMedium, "S1"), func(in *task.Input) { in.Policy = loosePolicy() })
		h.workerPolicy = func() (task.Policy, error) { return worker, nil }
		var byClientAdmin, byWorkerAdmin *reply
		var pending *decision.Decision
		h.at(time.Minute, func() {
			pending = h.state().Pending
			byClientAdmin = h.decide("mallory", decision.OptApprove, "")
		})
		h.at(time.Minute+time.Second, func() { byWorkerAdmin = h.decide("alice", decision.OptApprove, "") })
		h.round(time.Minute + time.Second)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s (%s), want done", res.Status, res.Reason)
		}
		if pending == nil || pending.Kind != task.KindPlanApproval {
			t.Fatalf("pending at 1m: %+v, want the plan approval the worker's policy asks for at medium risk", pending)
		}
		refused(t, byClientAdmin, task.CodeForbidden)
		accepted(t, byWorkerAdmin)

		rec, in := h.firstRecord()
		if rec.ID != "plan-"+testTaskID || rec.Kind != ssot.KindEvent {
			t.Errorf("first record %s (%s), want plan-%s", rec.ID, rec.Kind, testTaskID)
		}
		if got := strings.Join(in.Policy.Admins, ","); got != "alice" {
			t.Errorf("recorded admins %q, want the worker's alice", got)
		}
		if in.Policy.MaxRejects != worker.MaxRejects || in.Policy.PlanApproval != worker.PlanApproval || in.Policy.FinalApproval != worker.FinalApproval {
			t.Errorf("recorded policy %+v, want the worker's %+v", in.Policy, worker)
		}
	})

	t.Run("StricterHandling", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) {
			in.Policy = loosePolicy()
			in.Handling = task.HandlingAdmin
		})
		h.workerPolicy = func() (task.Policy, error) { return worker, nil }
		var pending *decision.Decision
		h.at(time.Minute, func() {
			pending = h.state().Pending
			h.decide("alice", decision.OptApprove, "")
		})
		h.round(time.Minute)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s (%s), want done", res.Status, res.Reason)
		}
		if pending == nil || pending.Kind != task.KindPlanApproval {
			t.Fatalf("pending at 1m: %+v, want a plan approval: the coordinator asked for admin handling", pending)
		}
		if _, in := h.firstRecord(); in.Policy.PlanApproval.Low != task.HandlingAdmin {
			t.Errorf("recorded plan approval %+v, want admin at low risk", in.Policy.PlanApproval)
		}
	})

	t.Run("NoWorkerPolicy", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), func(in *task.Input) { in.Policy = loosePolicy() })
		h.workerPolicy = func() (task.Policy, error) {
			return task.Policy{}, temporal.NewNonRetryableApplicationError("this worker has no task policy", activities.ErrNoPolicy, nil)
		}
		res, _ := h.runRefused()
		if res.Status != task.StatusTerminated || !strings.Contains(res.Reason, "no task policy") {
			t.Errorf("result %s %q, want terminated for want of a policy", res.Status, res.Reason)
		}
		if n := len(h.deliveredOf(amp.TypeTaskDispatch)); n != 0 {
			t.Errorf("%d dispatches sent under no policy", n)
		}
		if _, in := h.firstRecord(); len(in.Policy.Admins) != 0 || in.Policy.MaxRejects != 0 {
			t.Errorf("recorded policy %+v, want none rather than the client's", in.Policy)
		}
	})
}

// TestAdmins checks who may decide: nobody when no admin is configured,
// anyone named under "*", and otherwise only the listed names.
func TestAdmins(t *testing.T) {
	for _, tc := range []struct {
		name   string
		admins []string
		by     string
		want   bool
	}{
		{"NoneConfigured", nil, "alice", false},
		{"Anyone", []string{task.AnyAdmin}, "zed", true},
		{"AnyoneButNameless", []string{task.AnyAdmin}, "", false},
		{"Listed", []string{"alice"}, "alice", true},
		{"NotListed", []string{"alice"}, "zed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testPlan(amp.RiskMedium, "S1"), func(in *task.Input) {
				in.Policy.Admins = tc.admins
			})
			var r *reply
			h.at(time.Minute, func() { r = h.decide(tc.by, decision.OptApprove, "") })
			h.at(time.Minute+time.Second, func() {
				if !tc.want {
					h.update(task.UpdateCancel, "", task.CancelInput{Reason: "nobody may approve", By: "planner"})
				}
			})
			if tc.want {
				h.round(time.Minute + time.Second)
			}
			res := h.run()
			if !tc.want {
				refused(t, r, task.CodeForbidden)
				if res.Status != task.StatusTerminated {
					t.Errorf("status %s, want terminated by the cancel", res.Status)
				}
				return
			}
			accepted(t, r)
			if res.Status != task.StatusDone {
				t.Errorf("status %s (%s), want done", res.Status, res.Reason)
			}
		})
	}
}

// TestPlanApprovalInState: the state says how the plan is approved, from
// the worker's policy for the risk level and the start's handling.
func TestPlanApprovalInState(t *testing.T) {
	for _, c := range []struct {
		name     string
		risk     amp.Risk
		handling task.Handling
		want     task.Handling
	}{
		{"LowAuto", amp.RiskLow, "", task.HandlingAuto},
		{"HighAdmin", amp.RiskHigh, "", task.HandlingAdmin},
		{"LowAskedAdmin", amp.RiskLow, task.HandlingAdmin, task.HandlingAdmin},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, testPlan(c.risk, "S1"), func(in *task.Input) { in.Handling = c.handling })
			var got task.Handling
			h.at(time.Minute, func() { got = h.state().PlanApproval })
			h.at(2*time.Minute, func() { h.env.CancelWorkflow() })
			h.env.ExecuteWorkflow(Task, h.in) // cancelled: only the state matters
			if got != c.want {
				t.Errorf("plan_approval %q, want %q", got, c.want)
			}
		})
	}
}
