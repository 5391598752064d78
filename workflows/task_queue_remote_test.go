package workflows

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// fakeGitHubQueue answers the merge queue's GitHub activities over a
// target branch and a pull request kept in memory, as GitHub would.
type fakeGitHubQueue struct {
	mu sync.Mutex
	// target is the target's head on GitHub; merged the pull request's
	// merge commit once merged.
	target, merged string
	rebases        []activities.QueueRebaseRemoteInput
	merges         []activities.QueueMergePullInput
	// conflicts is how many rebases conflict before one is clean.
	conflicts int
	// lostAnswer loses the answer of the first merge that went through,
	// as a worker killed before it answered.
	lostAnswer bool
	// pushedUnder moves the target on GitHub once, before the first
	// merge, as a push by hand would.
	pushedUnder bool
	// keepsMoving moves the target before every merge, as a remote the
	// queue does not merge into would seem to.
	keepsMoving int
	// rules are the target's rule types.
	rules []string
	// GitHub's own merge queue: the enqueues, the head queued, the reads
	// of its entry since, and how many times it is taken out unmerged.
	enqueues []activities.QueueEnqueueInput
	queued   string
	reads    int
	takenOut int
}

var queueDelivery = task.Delivery{Push: true, PullRequest: "ready", Poll: time.Minute}

func (f *fakeGitHubQueue) install(h *harness) {
	f.target = "base0000"
	h.env.OnSignalExternalWorkflow(mock.Anything, "goal-G-0000000a", "", task.SignalQueueMove, mock.Anything).Return(nil)
	h.env.OnActivity(acts.QueueTarget, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueTargetInput) (activities.QueueTargetResult, error) {
			return activities.QueueTargetResult{Rules: f.rules, MergeQueue: slices.Contains(f.rules, "merge_queue")}, nil
		})
	// GitHub's own merge queue: an entry is read queued twice, then
	// merged, or taken out when takenOut says so of its enqueue.
	entry := func(in activities.QueueEnqueueInput) activities.QueueEntryResult {
		f.reads++
		switch {
		case f.reads < 3:
			return activities.QueueEntryResult{Queued: true, State: "AWAITING_CHECKS"}
		case f.takenOut > 0:
			f.takenOut--
			f.queued = ""
			return activities.QueueEntryResult{}
		}
		f.merged = "mq-merge-of-" + in.Head
		return activities.QueueEntryResult{Merged: true, SHA: f.merged}
	}
	h.env.OnActivity(acts.QueueEnqueue, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueEnqueueInput) (activities.QueueEntryResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.enqueues = append(f.enqueues, in)
			f.queued, f.reads = in.Head, 0
			return activities.QueueEntryResult{Queued: true, State: "QUEUED"}, nil
		})
	h.env.OnActivity(acts.QueueEntry, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueEnqueueInput) (activities.QueueEntryResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return entry(in), nil
		})
	h.env.OnActivity(acts.QueueRebaseRemote, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueRebaseRemoteInput) (activities.QueueRebaseResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.rebases = append(f.rebases, in)
			if len(f.rebases) <= f.conflicts {
				return activities.QueueRebaseResult{Base: f.target, Head: in.Head, Conflicts: []string{"shared.txt"}}, nil
			}
			return activities.QueueRebaseResult{Base: f.target, Head: in.Head, Rebased: "rebased" + f.target}, nil
		})
	h.env.OnActivity(acts.QueueMergePull, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueMergePullInput) (activities.QueueMergePullResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.merges = append(f.merges, in)
			if f.merged != "" {
				return activities.QueueMergePullResult{SHA: f.merged}, nil
			}
			if f.pushedUnder {
				f.pushedUnder = false
				f.target = "byhand00"
			}
			if f.keepsMoving > 0 {
				f.keepsMoving++
				f.target = fmt.Sprintf("byhand%02d", f.keepsMoving)
			}
			if f.target != in.Base {
				return activities.QueueMergePullResult{Moved: true, Head: f.target}, nil
			}
			f.merged = "merge-of-" + in.Commit
			f.target = f.merged
			if f.lostAnswer {
				f.lostAnswer = false
				return activities.QueueMergePullResult{}, errors.New("worker lost")
			}
			return activities.QueueMergePullResult{SHA: f.merged}, nil
		})
}

// installMove answers QueueMoveRemote as a remote would: a compare and
// swap of its target.
func (f *fakeGitHubQueue) installMove(h *harness) *[]activities.QueueMoveRemoteInput {
	var moves []activities.QueueMoveRemoteInput
	h.env.OnActivity(acts.QueueMoveRemote, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueMoveRemoteInput) (activities.QueueMergeResult, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			moves = append(moves, in)
			switch f.target {
			case in.Rebased:
				return activities.QueueMergeResult{Head: in.Rebased, Already: true}, nil
			case in.Base:
				f.target = in.Rebased
				if f.lostAnswer {
					f.lostAnswer = false
					return activities.QueueMergeResult{}, errors.New("worker lost")
				}
				return activities.QueueMergeResult{Head: in.Rebased}, nil
			}
			return activities.QueueMergeResult{Head: f.target, Moved: true}, nil
		})
	return &moves
}

func newGitHubQueue(t *testing.T, f *fakeGitHubQueue, mutate ...func(*task.Input)) (*harness, *fakeGitHub) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), append([]func(*task.Input){withQueue, withDelivery(queueDelivery)}, mutate...)...)
	commitsPerRound(h)
	g := &fakeGitHub{}
	g.install(h)
	f.install(h)
	return h, g
}

func TestMergeQueueGitHub(t *testing.T) {
	t.Run("Merged", func(t *testing.T) {
		f := &fakeGitHubQueue{}
		h, g := newGitHubQueue(t, f)
		h.round(0)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged != "merge-of-rebasedbase0000" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		if len(g.syncs) == 0 || g.syncs[0].Base != "main" {
			t.Errorf("pull request syncs %+v, want one into the queue's target", g.syncs)
		}
		first := g.pushes[0].Commit
		if len(f.rebases) != 1 || f.rebases[0].Head != first || f.rebases[0].Target != "main" || f.rebases[0].Remote != "https://github.com/acme/rhylm.git" {
			t.Errorf("rebases %+v, want one of the pushed head %s", f.rebases, first)
		}
		// The rebase is pushed with a lease on the head it replaces.
		if len(g.pushes) != 2 || g.pushes[1].Commit != "rebasedbase0000" || g.pushes[1].Lease != first {
			t.Errorf("pushes %+v", g.pushes)
		}
		if last := h.ciInputs[len(h.ciInputs)-1]; last.Commit != "rebasedbase0000" || last.GitHubRepo != "github.com/acme/rhylm" {
			t.Errorf("the last CI read %+v, want GitHub's of the pushed rebase", last)
		}
		if len(f.merges) != 1 || f.merges[0].Commit != "rebasedbase0000" || f.merges[0].Base != "base0000" || f.merges[0].Number != 7 || f.merges[0].Method != "" {
			t.Errorf("merges %+v", f.merges)
		}
		if len(g.merges) != 0 {
			t.Errorf("merged outside the queue: %+v", g.merges)
		}
		st := h.state()
		if st.Queue.Status != task.QueueMerged || st.MergeCommit != res.Merged || !timelineHas(st, "queue", "merged https://github.com/acme/rhylm/pull/7 into main as merge-o (queue)") ||
			!timelineHas(st, "queue", "rebased onto main at base0000") {
			t.Errorf("state queue %+v, merge %q, timeline %+v", st.Queue, st.MergeCommit, st.Timeline)
		}
		if got := strings.Join(h.leaseCalls, ","); got != "acquire,acquire,renew,release,release" {
			t.Errorf("lease calls %s", got)
		}
		ids := h.recordIDs()
		if ids["queue-merge-"+testTaskID] != 1 || ids["push-"+testTaskID+"-rebasedbase0"] != 1 {
			t.Errorf("records %v", ids)
		}
	})

	// A merge whose answer was lost is tried again: the pull request is
	// found merged, and its merge commit taken; nothing merges twice.
	t.Run("RetryAfterMerge", func(t *testing.T) {
		f := &fakeGitHubQueue{lostAnswer: true}
		h, _ := newGitHubQueue(t, f)
		h.round(0)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged != "merge-of-rebasedbase0000" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		if len(f.merges) != 2 || f.target != res.Merged {
			t.Errorf("merges %+v, target %s: want the merge tried twice and made once", f.merges, f.target)
		}
		if h.recordIDs()["queue-merge-"+testTaskID] != 1 {
			t.Errorf("merge records %v", h.recordIDs())
		}
	})

	// A target moved on GitHub under the queue is rebased onto again,
	// with no round, and the new rebase pushed over the first.
	t.Run("TargetMoved", func(t *testing.T) {
		f := &fakeGitHubQueue{pushedUnder: true}
		h, g := newGitHubQueue(t, f)
		h.round(0)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged != "merge-of-rebasedbyhand00" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		if len(f.rebases) != 2 || f.rebases[1].Head != "rebasedbase0000" {
			t.Errorf("rebases %+v, want the second of the first rebase", f.rebases)
		}
		if n := len(g.pushes); n != 3 || g.pushes[2].Lease != "rebasedbase0000" || g.pushes[2].Commit != "rebasedbyhand00" {
			t.Errorf("pushes %+v", g.pushes)
		}
		if st := h.state(); st.Queue.Rounds != 0 || len(h.deliveredOf(amp.TypeTaskDispatch)) != 1 {
			t.Errorf("queue rounds %d, %d dispatches: a moved target is no round", st.Queue.Rounds, len(h.deliveredOf(amp.TypeTaskDispatch)))
		}
	})

	// A target that moves before every merge is rebased onto five
	// times, then the admins are asked.
	t.Run("TargetKeepsMoving", func(t *testing.T) {
		f := &fakeGitHubQueue{keepsMoving: 1}
		h, _ := newGitHubQueue(t, f)
		h.round(0)
		var asked task.State
		h.at(time.Minute, func() {
			asked = h.state()
			h.decide("alice", task.OptTerminate, "")
		})
		res := h.run()
		if asked.Pending == nil || asked.Pending.Kind != task.KindMergeQueue || !strings.Contains(asked.Pending.Prompt, "moved 5 times in a row on the remote") {
			t.Fatalf("pending %+v, status %s", asked.Pending, asked.Status)
		}
		if res.Status != task.StatusTerminated || len(f.merges) != 5 || len(f.rebases) != 5 {
			t.Errorf("result %s, %d merges, %d rebases; want terminated after five of each: %+v", res.Status, len(f.merges), len(f.rebases), asked.Timeline)
		}
	})

	t.Run("ConflictRound", func(t *testing.T) {
		f := &fakeGitHubQueue{conflicts: 1}
		h, g := newGitHubQueue(t, f)
		h.round(0)
		h.round(20 * time.Second)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged == "" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		ds := h.deliveredOf(amp.TypeTaskDispatch)
		if len(ds) != 2 || !strings.Contains(ds[1].Dispatch().Description, "Conflicting files: shared.txt") ||
			!strings.Contains(ds[1].Dispatch().Description, "git rebase origin/main") {
			t.Fatalf("%d dispatches; the round's: %s", len(ds), ds[len(ds)-1].Dispatch().Description)
		}
		// The round's result is pushed over the first with its lease, and
		// that push is what the queue rebases next.
		if len(f.rebases) != 2 || f.rebases[1].Head != g.pushes[1].Commit || g.pushes[1].Lease != g.pushes[0].Commit {
			t.Errorf("rebases %+v, pushes %+v", f.rebases, g.pushes)
		}
	})

	t.Run("CIRound", func(t *testing.T) {
		f := &fakeGitHubQueue{}
		h, _ := newGitHubQueue(t, f)
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
		if len(ds) != 2 || !strings.Contains(ds[1].Dispatch().Description, "CI fails on your branch") {
			t.Fatalf("%d dispatches; the round's: %s", len(ds), ds[len(ds)-1].Dispatch().Description)
		}
		if len(f.merges) != 1 || h.state().Queue.Rounds != 1 {
			t.Errorf("merges %+v, rounds %d: want one merge, after the round", f.merges, h.state().Queue.Rounds)
		}
	})

	// A target behind GitHub's own merge queue: the pull request is
	// enqueued there with its pushed head, no rebase or push of
	// ampflow's, and the task waits for GitHub's merge.
	t.Run("GitHubMergeQueue", func(t *testing.T) {
		f := &fakeGitHubQueue{rules: []string{"pull_request", "merge_queue"}}
		h, g := newGitHubQueue(t, f)
		h.round(0)
		var waiting task.State
		h.at(20*time.Second, func() { waiting = h.state() })
		res := h.run()
		if res.Status != task.StatusDone || res.Merged != "mq-merge-of-"+g.pushes[0].Commit {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		if len(f.enqueues) != 1 || f.enqueues[0].Head != g.pushes[0].Commit || f.enqueues[0].NodeID != "PR_7" ||
			len(f.rebases) != 0 || len(g.pushes) != 1 || len(f.merges) != 0 {
			t.Errorf("enqueues %+v, rebases %d, pushes %d, merges %d", f.enqueues, len(f.rebases), len(g.pushes), len(f.merges))
		}
		if waiting.Status != task.StatusCICheck || !timelineHas(waiting, "status", "in GitHub's merge queue of main") {
			t.Errorf("while queued on GitHub: %s, timeline %+v", waiting.Status, waiting.Timeline)
		}
		st := h.state()
		if st.MergeCommit != res.Merged || !timelineHas(st, "queue", "added https://github.com/acme/rhylm/pull/7 to GitHub's merge queue of main") {
			t.Errorf("merge %q, timeline %+v", st.MergeCommit, st.Timeline)
		}
		if got := strings.Join(h.leaseCalls, ","); !strings.HasSuffix(got, "release,release") {
			t.Errorf("lease calls %s", got)
		}
	})

	// Taken out of GitHub's merge queue unmerged, the pull request goes
	// back to its executor; its next result is enqueued anew.
	t.Run("GitHubMergeQueueTakenOut", func(t *testing.T) {
		f := &fakeGitHubQueue{rules: []string{"merge_queue"}, takenOut: 1}
		h, g := newGitHubQueue(t, f)
		h.round(0)
		h.round(5 * time.Minute) // after three reads of the entry, ci.poll_interval apart
		res := h.run()
		if res.Status != task.StatusDone || res.Merged == "" {
			t.Fatalf("result %s %q (%s)", res.Status, res.Merged, res.Reason)
		}
		ds := h.deliveredOf(amp.TypeTaskDispatch)
		if len(ds) != 2 || !strings.Contains(ds[1].Dispatch().Description, "took your pull request https://github.com/acme/rhylm/pull/7 out") {
			t.Fatalf("%d dispatches; the round's: %s", len(ds), ds[len(ds)-1].Dispatch().Description)
		}
		if len(f.enqueues) != 2 || f.enqueues[1].Head != g.pushes[1].Commit || h.state().Queue.Rounds != 1 {
			t.Errorf("enqueues %+v, pushes %+v, rounds %d", f.enqueues, g.pushes, h.state().Queue.Rounds)
		}
	})

	// A repository given by URL with no pull request: the rebase is
	// pushed to the task's branch, then to the target with a lease on
	// its head at the rebase; a retry finds the target there.
	t.Run("URLRepository", func(t *testing.T) {
		f := &fakeGitHubQueue{lostAnswer: true}
		h, g := newGitHubQueue(t, f, func(in *task.Input) {
			in.Plan.Repo = "https://git.example.com/acme/rhylm.git"
			in.Policy.Delivery = task.Delivery{}
		})
		h.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
			return activities.CheckBranchResult{DefaultBranch: "main", Head: "abc"}, nil
		}
		moves := f.installMove(h)
		h.round(0)
		res := h.run()
		if res.Status != task.StatusDone || res.Merged != "rebasedbase0000" || f.target != res.Merged {
			t.Fatalf("result %s %q (%s), target %s", res.Status, res.Merged, res.Reason, f.target)
		}
		if len(g.pushes) != 2 || g.pushes[1].Commit != "rebasedbase0000" || g.pushes[1].Lease != g.pushes[0].Commit {
			t.Errorf("pushes %+v", g.pushes)
		}
		if len(*moves) != 2 || (*moves)[0].Base != "base0000" || (*moves)[0].Target != "main" || (*moves)[0].Remote != "https://github.com/acme/rhylm.git" {
			t.Errorf("moves %+v, want the one tried twice", *moves)
		}
		if len(f.merges) != 0 || len(g.syncs) != 0 {
			t.Errorf("pull request merges %+v, syncs %+v, with no pull request", f.merges, g.syncs)
		}
		if st := h.state(); !timelineHas(st, "queue", "merged "+testPlan(amp.RiskLow).Branch+" into main as rebased (queue)") {
			t.Errorf("timeline %+v", st.Timeline)
		}
	})
}
