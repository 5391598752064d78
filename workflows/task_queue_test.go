package workflows

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// fakeQueue answers the merge queue's activities over a target branch
// kept in memory, and keeps the moves its goal was told of.
type fakeQueue struct {
	mu sync.Mutex
	// target is the target's head; each rebase makes rebasedN on it.
	target  string
	rebases []activities.QueueRebaseInput
	merges  []activities.QueueMergeInput
	// conflicts is how many rebases conflict before one is clean.
	conflicts int
	// failMerge fails the first merge after it moved the target, as a
	// worker killed before it answered.
	failMerge bool
	moves     []task.QueueMove
}

func withQueue(in *task.Input) {
	in.Queue = &task.QueueSpec{Target: "main", Goal: "goal-G-0000000a", Key: "api"}
}

func (f *fakeQueue) install(h *harness) {
	f.target = "base0000"
	h.env.OnActivity(acts.QueueRebase, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueRebaseInput) (activities.QueueRebaseResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.rebases = append(f.rebases, in)
			if len(f.rebases) <= f.conflicts {
				return activities.QueueRebaseResult{Base: f.target, Head: "head", Conflicts: []string{"shared.txt"}}, nil
			}
			return activities.QueueRebaseResult{Base: f.target, Head: "head", Rebased: "rebased" + f.target}, nil
		})
	h.env.OnActivity(acts.QueueMerge, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueMergeInput) (activities.QueueMergeResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.merges = append(f.merges, in)
			switch f.target {
			case in.Rebased:
				return activities.QueueMergeResult{Head: in.Rebased, Already: true}, nil
			case in.Base:
				f.target = in.Rebased
				if f.failMerge {
					f.failMerge = false
					return activities.QueueMergeResult{}, errors.New("worker lost")
				}
				return activities.QueueMergeResult{Head: in.Rebased}, nil
			}
			return activities.QueueMergeResult{Head: f.target, Moved: true}, nil
		})
	h.env.OnSignalExternalWorkflow(mock.Anything, "goal-G-0000000a", "", task.SignalQueueMove, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.moves = append(f.moves, arg.(task.QueueMove))
			return nil
		})
}

// told is the moves the goal was told, in their order, once want of
// them came or 5 s passed: the test environment sends signals in
// goroutines of their own, which may end after the workflow did.
func (f *fakeQueue) told(want int) []task.QueueStatus {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		n := len(f.moves)
		f.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]task.QueueStatus, len(f.moves))
	for _, m := range f.moves {
		if m.Seq < 1 || m.Seq > len(out) || out[m.Seq-1] != "" {
			return nil
		}
		out[m.Seq-1] = m.Status
	}
	return out
}

func timelineHas(st task.State, kind, note string) bool {
	for _, e := range st.Timeline {
		if e.Kind == kind && strings.Contains(e.Note, note) {
			return true
		}
	}
	return false
}

func TestMergeQueue(t *testing.T) {
	t.Run("Merged", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withQueue)
		f := &fakeQueue{}
		f.install(h)
		h.round(0)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged != "rebasedbase0000" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		st := h.state()
		if st.Queue == nil || st.Queue.Status != task.QueueMerged || st.MergeCommit != res.Merged || !timelineHas(st, "queue", "merged into main as rebased (queue)") {
			t.Errorf("state queue %+v, merge %q, timeline %+v", st.Queue, st.MergeCommit, st.Timeline)
		}
		if len(f.merges) != 1 || f.merges[0].Base != "base0000" || f.merges[0].Target != "main" || f.merges[0].Branch != testPlan(amp.RiskLow).Branch {
			t.Errorf("merges %+v", f.merges)
		}
		// CI ran on the rebase before the merge.
		if last := h.ciInputs[len(h.ciInputs)-1]; last.Commit != "rebasedbase0000" {
			t.Errorf("the last CI read %+v, want the rebase's", last)
		}
		// The harness's leases carry no expiry: the target's is renewed
		// before the move, as a lease half gone would be.
		if got := strings.Join(h.leaseCalls, ","); got != "acquire,acquire,renew,release,release" {
			t.Errorf("lease calls %s: the branch's, then the target's taken, renewed and given back", got)
		}
		if got := f.told(3); len(got) != 3 || got[0] != task.QueueQueued || got[1] != task.QueueMerging || got[2] != task.QueueMerged {
			t.Errorf("the goal was told %v", got)
		}
		if h.recordIDs()["queue-merge-"+testTaskID] != 1 {
			t.Errorf("merge records %v", h.recordIDs())
		}
	})

	t.Run("WaitsItsTurn", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withQueue)
		f := &fakeQueue{}
		f.install(h)
		targetKey := activities.BranchKey("/repos/rhylm", "main")
		granted := false
		h.acquireLease = func(in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
			if in.Branch == "main" && !granted {
				return activities.BranchLeaseResult{Holder: "T-2026-099", Queued: 1}, nil
			}
			return activities.BranchLeaseResult{Lease: &task.BranchLease{LeaseID: "L-" + in.Branch, ResourceKey: activities.BranchKey(in.Repo, in.Branch)}}, nil
		}
		h.round(0)
		var waiting task.State
		var rebasesWaiting int
		h.at(30*time.Second, func() {
			waiting = h.state()
			rebasesWaiting = len(f.rebases)
			granted = true
			h.env.SignalWorkflow(task.SignalLeaseGranted, task.LeaseGrant{Lease: task.BranchLease{LeaseID: "L-main", ResourceKey: targetKey}})
		})
		res := h.run()
		if res.Status != task.StatusDone || res.Merged == "" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		if rebasesWaiting != 0 || waiting.Status != task.StatusAwaitingLease || waiting.Queue == nil || waiting.Queue.Status != task.QueueQueued {
			t.Errorf("while T-2026-099 held main: %d rebases, status %s, queue %+v", rebasesWaiting, waiting.Status, waiting.Queue)
		}
		if h.env.Now().Sub(waiting.StartedAt) >= queueRecheck {
			t.Errorf("merged at %s: the grant did not wake the task", h.env.Now().Sub(waiting.StartedAt))
		}
	})

	t.Run("ConflictRound", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withQueue)
		f := &fakeQueue{conflicts: 1}
		f.install(h)
		h.round(0)
		h.round(20 * time.Second)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged == "" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		ds := h.deliveredOf(amp.TypeTaskDispatch)
		if len(ds) != 2 {
			t.Fatalf("%d dispatches, want 2", len(ds))
		}
		for _, want := range []string{"no longer rebases cleanly onto main", "rebase round 1 of", "Conflicting files: shared.txt"} {
			if !strings.Contains(ds[1].Dispatch().Description, want) {
				t.Errorf("the round's dispatch lacks %q:\n%s", want, ds[1].Dispatch().Description)
			}
		}
		if got := f.told(6); len(got) != 6 || got[2] != task.QueueRound || got[5] != task.QueueMerged {
			t.Errorf("the goal was told %v", got)
		}
		if st := h.state(); st.Queue.Rounds != 1 {
			t.Errorf("queue rounds %d, want 1", st.Queue.Rounds)
		}
	})

	t.Run("CIRound", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withQueue)
		f := &fakeQueue{}
		f.install(h)
		failed := false
		h.ci = func(n int) activities.CIStatusResult {
			if in := h.ciInputs[n-1]; strings.HasPrefix(in.Commit, "rebased") && !failed {
				failed = true
				return activities.CIStatusResult{State: activities.CIFailed, Failing: []string{"test"}, Detail: "FAIL: TestShared"}
			}
			return activities.CIStatusResult{State: activities.CIPassed}
		}
		h.round(0)
		h.round(20 * time.Second)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged == "" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		ds := h.deliveredOf(amp.TypeTaskDispatch)
		if len(ds) != 2 || !strings.Contains(ds[1].Dispatch().Description, "CI fails on your branch") ||
			!strings.Contains(ds[1].Dispatch().Description, "FAIL: TestShared") {
			t.Fatalf("dispatches %d; the round's: %s", len(ds), ds[len(ds)-1].Dispatch().Description)
		}
		if len(f.merges) != 1 {
			t.Errorf("merges %+v, want one, after the round", f.merges)
		}
	})

	t.Run("BoundDecides", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withQueue, func(in *task.Input) { in.Policy.MaxCIRounds = 1 })
		h.workerPolicy = func() (task.Policy, error) { return h.in.Policy, nil }
		f := &fakeQueue{conflicts: 10}
		f.install(h)
		h.round(0)
		h.round(20 * time.Second)
		var asked task.State
		h.at(40*time.Second, func() {
			asked = h.state()
			h.decide("alice", task.OptTerminate, "")
		})
		res := h.run()
		if asked.Pending == nil || asked.Pending.Kind != task.KindMergeQueue || !strings.Contains(asked.Pending.Prompt, "after 1 rounds") {
			t.Fatalf("after the bound: pending %+v, status %s", asked.Pending, asked.Status)
		}
		if res.Status != task.StatusTerminated || len(h.deliveredOf(amp.TypeTaskDispatch)) != 2 || len(f.merges) != 0 {
			t.Errorf("result %s, %d dispatches, merges %+v", res.Status, len(h.deliveredOf(amp.TypeTaskDispatch)), f.merges)
		}
		if got := strings.Join(h.leaseCalls, ","); strings.Count(got, "release") != 3 {
			t.Errorf("lease calls %s: the target's given back at each round and before the question", got)
		}
	})

	t.Run("LeaseLostBeforeMove", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withQueue)
		f := &fakeQueue{}
		f.install(h)
		lost := false
		h.renewLease = func(in activities.BranchLeaseInput) (activities.BranchLeaseResult, error) {
			if in.Branch == "main" && !lost {
				lost = true
				return activities.BranchLeaseResult{Lost: "expired"}, nil
			}
			return activities.BranchLeaseResult{Lease: &task.BranchLease{LeaseID: in.LeaseID}}, nil
		}
		h.round(0)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged == "" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		if len(f.rebases) != 2 || len(f.merges) != 1 || !timelineHas(h.state(), "queue", "lost") {
			t.Errorf("rebases %d, merges %d: want the entry queued and rebased again, moved once", len(f.rebases), len(f.merges))
		}
	})

	t.Run("RetriedMergeOnce", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withQueue)
		f := &fakeQueue{failMerge: true}
		f.install(h)
		h.round(0)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged != "rebasedbase0000" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		if len(f.merges) != 2 || f.target != "rebasedbase0000" || len(f.rebases) != 1 {
			t.Errorf("merges %+v, rebases %d, target %s: want one move, found done by the retry", f.merges, len(f.rebases), f.target)
		}
		if h.recordIDs()["queue-merge-"+testTaskID] != 1 {
			t.Errorf("merge records %v", h.recordIDs())
		}
	})
}
