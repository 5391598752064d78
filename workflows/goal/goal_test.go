package goal

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/goal"
	"github.com/ampflow/ampflow/amp/task"
)

// TestDiamond: schema first; api and ui together once it is done; docs
// once both are.
func TestDiamond(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	h.takes = map[string]time.Duration{"schema": time.Second, "api": time.Second, "ui": 3 * time.Second, "docs": time.Second}
	h.run(Input{Goal: diamond(), Coordinator: "ci"})
	st := h.result()
	if st.Status != goal.StatusDone {
		t.Fatalf("status %s (%s)", st.Status, st.Reason)
	}
	if st.Approval == nil || st.Approval.Channel != decision.ChannelSystem || st.Digest == "" {
		t.Errorf("approval %+v digest %q", st.Approval, st.Digest)
	}
	if got := strings.Join(h.starts, " "); got != "schema api ui docs" && got != "schema ui api docs" {
		t.Errorf("start order %q", got)
	}
	if !h.started["api"].Equal(h.started["ui"]) {
		t.Errorf("api started %v, ui %v: not together", h.started["api"], h.started["ui"])
	}
	if !h.started["api"].After(h.started["schema"]) || !h.started["docs"].After(h.started["ui"]) {
		t.Errorf("starts %v", h.started)
	}
	for _, ts := range st.Tasks {
		if ts.Status != goal.TaskDone || ts.TaskID == "" || ts.Base != "abc" {
			t.Errorf("task %+v", ts)
		}
	}
}

// TestStartsFromRemote: a goal whose tasks deliver pull requests, or
// whose repository is a URL, has its tasks' branches made from the
// target on the remote, where their queue merges; a local one from the
// repository's own target.
func TestStartsFromRemote(t *testing.T) {
	for _, tc := range []struct {
		name, pull, repo string
		remote           bool
	}{
		{"PullRequests", "ready", "/src/app", true},
		{"Local", "", "/src/app", false},
		{"URL", "", "https://example.com/acme/app.git", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := policy(task.HandlingAuto)
			pol.Delivery = task.Delivery{Push: tc.pull != "", PullRequest: tc.pull}
			h := newHarness(t, pol)
			g := diamond()
			g.Repo = tc.repo
			for i := range g.Tasks {
				g.Tasks[i].Plan.Repo = tc.repo
			}
			h.run(Input{Goal: g, Coordinator: "ci"})
			if st := h.result(); st.Status != goal.StatusDone {
				t.Fatalf("status %s (%s)", st.Status, st.Reason)
			}
			for _, k := range []string{"schema", "api", "ui", "docs"} {
				if h.remote[k] != tc.remote {
					t.Errorf("task %s started with remote %v, want %v", k, h.remote[k], tc.remote)
				}
			}
		})
	}
}

// TestTerminatedBlockerHolds: api ends terminated; docs is held, the goal
// blocked with a decision; retry starts api again and the goal ends done.
func TestTerminatedBlockerHolds(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	h.takes = map[string]time.Duration{"schema": time.Second, "api": time.Second, "ui": time.Second, "docs": time.Second}
	h.ends["api"] = task.StatusTerminated
	var retried error
	h.env.RegisterDelayedCallback(func() {
		st := h.state()
		if st.Status != goal.StatusBlocked || !strings.Contains(st.Reason, "task api") || !strings.Contains(st.Reason, "docs wait on it") {
			t.Errorf("blocked state %s: %s", st.Status, st.Reason)
		}
		if st.Pending == nil || st.Pending.Kind != goal.DecisionBlocked {
			t.Errorf("pending %+v", st.Pending)
		}
		for _, ts := range st.Tasks {
			if ts.Key == "docs" && ts.Status != goal.TaskHeld {
				t.Errorf("docs is %s", ts.Status)
			}
			if ts.Key == "api" && (ts.Status != goal.TaskTerminated || ts.Reason != "plan rejected by bob") {
				t.Errorf("api %+v", ts)
			}
		}
		if _, ok := h.started["docs"]; ok {
			t.Error("docs started under a terminated blocker")
		}
		h.mu.Lock()
		h.ends["api"] = task.StatusDone
		h.mu.Unlock()
		retried = h.answer(goal.OptRetry)
	}, time.Hour)
	h.run(Input{Goal: diamond()})
	if retried != nil {
		t.Fatal(retried)
	}
	st := h.result()
	if st.Status != goal.StatusDone {
		t.Fatalf("status %s (%s)", st.Status, st.Reason)
	}
	if got := strings.Count(strings.Join(h.starts, " "), "api"); got != 2 {
		t.Errorf("api started %d times", got)
	}
}

// TestAbandoned: an admin abandons a blocked goal; it ends terminated.
func TestAbandoned(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	h.ends["schema"] = task.StatusTerminated
	var err error
	h.env.RegisterDelayedCallback(func() { err = h.answer(goal.OptAbandon) }, time.Hour)
	h.run(Input{Goal: diamond()})
	if err != nil {
		t.Fatal(err)
	}
	st := h.result()
	if st.Status != goal.StatusTerminated || !strings.Contains(st.Reason, "abandoned by alice") {
		t.Fatalf("status %s (%s)", st.Status, st.Reason)
	}
	if len(h.starts) != 1 {
		t.Errorf("starts %v", h.starts)
	}
}

// TestPlanDecision: a policy that asks an admin holds every task until
// the graph is approved, by digest.
func TestPlanDecision(t *testing.T) {
	for name, tc := range map[string]struct {
		option string
		want   goal.Status
		starts int
	}{"Approved": {decision.OptApprove, goal.StatusDone, 4}, "Rejected": {decision.OptReject, goal.StatusRejected, 0}} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, policy(task.HandlingAdmin))
			var err error
			h.env.RegisterDelayedCallback(func() {
				st := h.state()
				if st.Status != goal.StatusAwaitingApproval || st.Pending == nil || st.Pending.Kind != goal.DecisionGoalPlan || st.Pending.Digest != st.Digest {
					t.Errorf("waiting state %+v", st)
				}
				if len(h.starts) != 0 {
					t.Error("a task started before the graph was approved")
				}
				err = h.answer(tc.option)
			}, time.Minute)
			h.run(Input{Goal: diamond()})
			if err != nil {
				t.Fatal(err)
			}
			st := h.result()
			if st.Status != tc.want || len(h.starts) != tc.starts {
				t.Errorf("status %s (%s), %d starts", st.Status, st.Reason, len(h.starts))
			}
		})
	}
}

// TestOverlap: two running tasks whose branches change one file each
// see the other in their overlaps.
func TestOverlap(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	h.takes = map[string]time.Duration{"schema": time.Second, "api": time.Hour, "ui": time.Hour, "docs": time.Second}
	h.files = func(branch string) []string {
		if strings.HasSuffix(branch, "/api") {
			return []string{"a.go", "shared.go"}
		}
		return []string{"shared.go", "ui.go"}
	}
	var seen []goal.Overlap
	h.env.RegisterDelayedCallback(func() {
		for _, ts := range h.state().Tasks {
			if ts.Key == "ui" {
				seen = ts.Overlaps
			}
		}
	}, 20*time.Minute)
	h.run(Input{Goal: diamond(), OverlapEvery: time.Minute})
	if st := h.result(); st.Status != goal.StatusDone {
		t.Fatalf("status %s", st.Status)
	}
	if len(seen) != 1 || seen[0].With != "api" || strings.Join(seen[0].Files, ",") != "shared.go" {
		t.Errorf("ui's overlaps %+v", seen)
	}
	// Each agent is told once, though the overlap is seen at every check.
	if len(h.told) != 2 || h.told[0].TaskID == h.told[1].TaskID || !strings.Contains(h.told[0].Text, "shared.go") || h.told[0].From != "goal G-0000abcd" {
		t.Errorf("told %+v", h.told)
	}
}

// TestContinuesAsNew: past MaxHistory the goal continues as new while
// its tasks run.
func TestContinuesAsNew(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	h.takes = map[string]time.Duration{"schema": time.Hour}
	// The test environment keeps no history: count the loop's turns.
	turns := 0
	historyLength = func(workflow.Context) int { turns++; return turns * 10 }
	t.Cleanup(func() {
		historyLength = func(ctx workflow.Context) int { return workflow.GetInfo(ctx).GetCurrentHistoryLength() }
	})
	h.run(Input{Goal: diamond(), MaxHistory: 30, OverlapEvery: time.Minute})
	var can *workflow.ContinueAsNewError
	if err := h.env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("the goal ended with %v, want a continue-as-new", err)
	}
}

// TestResumesCarried: a carried goal waits for its running task again
// without starting it, and starts the one that was starting under the
// same attempt, so its request key finds the task its first start made.
func TestResumesCarried(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	g := diamond()
	st := goal.State{Goal: g, Status: goal.StatusRunning, Target: "main", Tasks: []goal.TaskState{
		{Key: "schema", Status: goal.TaskDone, TaskID: "T-2026-001|schema", Queue: task.QueueMerged, Merged: "m-schema"},
		{Key: "api", Status: goal.TaskRunning, TaskID: "T-2026-002|api", BlockedBy: []string{"schema"}},
		{Key: "ui", Status: goal.TaskStarting, BlockedBy: []string{"schema"}},
		{Key: "docs", Status: goal.TaskWaiting, BlockedBy: []string{"api", "ui"}, WaitingOn: []string{"api", "ui"}},
	}}
	h.run(Input{Goal: g, Carried: &Carried{State: st, Policy: policy(task.HandlingAuto), Attempts: map[string]int{"schema": 1, "api": 1, "ui": 1}}})
	res := h.result()
	if res.Status != goal.StatusDone {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	if got := strings.Join(h.starts, " "); got != "ui docs" {
		t.Errorf("starts %q, want ui docs", got)
	}
	if h.attempts["ui"] != 0 {
		t.Errorf("ui started as attempt %d, want 0 again", h.attempts["ui"])
	}
}

// TestMergeQueueView: each task starts in its target's merge queue; the
// goal shows the queue's order as its tasks tell it, and docs starts
// once api and ui are merged.
func TestMergeQueueView(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	h.takes = map[string]time.Duration{"schema": time.Second, "api": time.Hour, "ui": time.Hour, "docs": time.Second}
	move := func(key string, s task.QueueStatus) {
		for _, ts := range h.state().Tasks {
			if ts.Key == key {
				h.env.SignalWorkflow(task.SignalQueueMove, task.QueueMove{Seq: ts.QueueSeq + 1, Key: key, TaskID: ts.TaskID, Status: s, At: h.env.Now()})
			}
		}
	}
	var queued, merging goal.State
	h.env.RegisterDelayedCallback(func() { move("ui", task.QueueQueued) }, 10*time.Minute)
	h.env.RegisterDelayedCallback(func() { move("api", task.QueueQueued) }, 11*time.Minute)
	h.env.RegisterDelayedCallback(func() { queued = h.state(); move("api", task.QueueMerging) }, 12*time.Minute)
	h.env.RegisterDelayedCallback(func() {
		// A move that arrives late (api's first) changes nothing.
		for _, ts := range h.state().Tasks {
			if ts.Key == "api" {
				h.env.SignalWorkflow(task.SignalQueueMove, task.QueueMove{Seq: 1, Key: "api", TaskID: ts.TaskID, Status: task.QueueQueued, At: h.env.Now()})
			}
		}
	}, 12*time.Minute+30*time.Second)
	h.env.RegisterDelayedCallback(func() { merging = h.state() }, 13*time.Minute)
	h.run(Input{Goal: diamond()})
	st := h.result()
	if st.Status != goal.StatusDone {
		t.Fatalf("status %s (%s)", st.Status, st.Reason)
	}
	if strings.Join(queued.Queue, ",") != "ui,api" || strings.Join(merging.Queue, ",") != "api,ui" {
		t.Errorf("queue %v when both queued, %v once api merges", queued.Queue, merging.Queue)
	}
	for _, ts := range merging.Tasks {
		if ts.Key == "api" && ts.Queue != task.QueueMerging || ts.Key == "ui" && (ts.Queue != task.QueueQueued || ts.QueuedAt.IsZero()) {
			t.Errorf("task %s in the queue: %s at %v", ts.Key, ts.Queue, ts.QueuedAt)
		}
	}
	for _, ts := range st.Tasks {
		if ts.Queue != task.QueueMerged || ts.Merged != "m-"+ts.Key {
			t.Errorf("task %s ended %s %q", ts.Key, ts.Queue, ts.Merged)
		}
		if q := h.queues[ts.Key]; q.Target != "main" || q.Goal != WorkflowID("G-0000abcd") || q.Key != ts.Key {
			t.Errorf("task %s started with queue %+v", ts.Key, q)
		}
	}
	if len(st.Queue) != 0 {
		t.Errorf("queue %v after every merge", st.Queue)
	}
}

// TestDoneUnmerged: a task that ends done without a merge holds its
// dependents: the admins decide, as for a terminated task.
func TestDoneUnmerged(t *testing.T) {
	h := newHarness(t, policy(task.HandlingAuto))
	h.unmerged["schema"] = true
	var st goal.State
	h.env.RegisterDelayedCallback(func() { st = h.state(); _ = h.answer(goal.OptAbandon) }, time.Hour)
	h.run(Input{Goal: diamond()})
	if st.Status != goal.StatusBlocked || st.Tasks[0].Status != goal.TaskTerminated || !strings.Contains(st.Tasks[0].Reason, "not merged into main") {
		t.Errorf("blocked %s: %+v", st.Status, st.Tasks[0])
	}
	if len(h.starts) != 1 {
		t.Errorf("starts %v: a dependent started on an unmerged blocker", h.starts)
	}
}
