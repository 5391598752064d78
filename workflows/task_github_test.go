package workflows

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/github"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// fakeGitHub answers the delivery activities of one task.
type fakeGitHub struct {
	pushes  []activities.PushInput
	syncs   []activities.PullRequestInput
	polls   []activities.ReviewsInput
	merges  []activities.MergeInput
	targets int
	// reviews answers the n-th read of the reviews (from 1).
	reviews func(n int) []activities.TakenReview
	// conflicts is how many merges conflict before one goes through.
	conflicts int
	// pushErr fails the n-th push (from 1) when it returns an error.
	pushErr func(n int) error
}

func withDelivery(d task.Delivery) func(*task.Input) {
	return func(in *task.Input) { in.Policy.Delivery = d }
}

func (f *fakeGitHub) install(h *harness) {
	h.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
		return activities.CheckBranchResult{DefaultBranch: "main", Head: "abc", GitHubRepo: "github.com/acme/rhylm"}, nil
	}
	env := h.env
	env.OnActivity(acts.PushTarget, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.PushTargetInput) (activities.PushTargetResult, error) {
			f.targets++
			return activities.PushTargetResult{URL: "https://github.com/acme/rhylm.git"}, nil
		})
	env.OnActivity(acts.PushBranch, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PushInput) (activities.PushResult, error) {
			f.pushes = append(f.pushes, in)
			if f.pushErr != nil {
				if err := f.pushErr(len(f.pushes)); err != nil {
					return activities.PushResult{}, err
				}
			}
			return activities.PushResult{Commit: in.Commit}, nil
		})
	env.OnActivity(acts.SyncPullRequest, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PullRequestInput) (activities.PullRequestResult, error) {
			f.syncs = append(f.syncs, in)
			return activities.PullRequestResult{Number: 7, URL: "https://github.com/acme/rhylm/pull/7", NodeID: "PR_7",
				Draft: in.Draft && !in.Ready, Created: in.Number == 0}, nil
		})
	env.OnActivity(acts.PullReviews, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReviewsInput) (activities.ReviewsResult, error) {
			f.polls = append(f.polls, in)
			var out activities.ReviewsResult
			out.ETag = fmt.Sprintf(`W/"%d"`, len(f.polls))
			if f.reviews != nil {
				for _, r := range f.reviews(len(f.polls)) {
					if !containsID(in.Taken, r.ID) {
						out.Reviews = append(out.Reviews, r)
					}
				}
			}
			return out, nil
		})
	env.OnActivity(acts.MergePullRequest, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.MergeInput) (activities.MergeResult, error) {
			f.merges = append(f.merges, in)
			if len(f.merges) <= f.conflicts {
				return activities.MergeResult{Conflict: "pull request is not mergeable"}, nil
			}
			return activities.MergeResult{SHA: "m3rg3c0mm1t"}, nil
		})
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// commitsPerRound makes each result's commit a new one, as git would.
func commitsPerRound(h *harness) {
	n := 0
	h.checkResult = func(in activities.CheckResultInput) (activities.CheckResultOutput, error) {
		n++
		return activities.CheckResultOutput{Commit: fmt.Sprintf("c0ffee%02d%s", n, strings.Repeat("0", 32)), Actual: in.Claimed}, nil
	}
}

var fullDelivery = task.Delivery{Push: true, PullRequest: "draft", Merge: "squash", Approvals: 1, Poll: time.Minute}

func TestGitHubDelivery(t *testing.T) {
	t.Run("Merged", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withDelivery(fullDelivery))
		commitsPerRound(h)
		f := &fakeGitHub{reviews: func(n int) []activities.TakenReview {
			if n < 3 {
				return nil
			}
			return []activities.TakenReview{{ID: 11, User: "alice", State: "APPROVED"}}
		}}
		f.install(h)
		var waiting task.State
		h.at(30*time.Second, func() { waiting = h.state() })
		h.round(0)
		res := h.run()
		if res.Status != task.StatusDone {
			t.Fatalf("status %s (%s), want done", res.Status, res.Reason)
		}
		if f.targets != 1 || len(f.pushes) != 1 || f.pushes[0].Remote != "https://github.com/acme/rhylm.git" || f.pushes[0].Lease != "" {
			t.Errorf("push target %d, pushes %+v", f.targets, f.pushes)
		}
		if len(f.syncs) != 2 || f.syncs[0].Number != 0 || !f.syncs[0].Draft || f.syncs[1].Number != 7 || !f.syncs[1].Ready || f.syncs[1].Done != 1 {
			t.Errorf("pull request syncs %+v", f.syncs)
		}
		if waiting.Status != task.StatusInReview || waiting.PullRequest != "https://github.com/acme/rhylm/pull/7" {
			t.Errorf("while waiting for GitHub: status %s, pull request %q", waiting.Status, waiting.PullRequest)
		}
		if len(f.polls) != 3 || f.polls[1].ETag != `W/"1"` {
			t.Errorf("polls %+v, want three, each with the last ETag", f.polls)
		}
		if got := h.env.Now().Sub(waiting.StartedAt); got < 2*time.Minute {
			t.Errorf("done after %s, want two polls a minute apart first", got)
		}
		if len(f.merges) != 1 || f.merges[0].Method != "squash" || f.merges[0].Commit != f.pushes[0].Commit || f.merges[0].Number != 7 {
			t.Errorf("merges %+v", f.merges)
		}
		st := h.state()
		if st.MergeCommit != "m3rg3c0mm1t" || st.PullRequest == "" {
			t.Errorf("state pull request %q, merge %q", st.PullRequest, st.MergeCommit)
		}
		ids := h.recordIDs()
		for _, want := range []string{"push-" + testTaskID + "-c0ffee010000", "pull-" + testTaskID + "-7-1-opened", "github-review-" + testTaskID + "-11", "merge-" + testTaskID + "-7"} {
			if ids[want] != 1 {
				t.Errorf("record %s written %d times; records %v", want, ids[want], ids)
			}
		}
	})

	t.Run("ChangesRequested", func(t *testing.T) {
		d := fullDelivery
		d.Merge = "off"
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withDelivery(d))
		commitsPerRound(h)
		f := &fakeGitHub{reviews: func(n int) []activities.TakenReview {
			if n == 1 {
				return []activities.TakenReview{{ID: 21, User: "alice", State: "CHANGES_REQUESTED", Body: "Not yet.",
					Comments: []github.ReviewComment{{ID: 5, Path: "Sources/BreathEngine.swift", Line: 42, Body: "use a monotonic clock", User: "alice"}}}}
			}
			return []activities.TakenReview{{ID: 22, User: "alice", State: "APPROVED"}}
		}}
		f.install(h)
		h.round(0)
		h.round(20 * time.Second)
		res := h.run()
		if res.Status != task.StatusDone {
			t.Fatalf("status %s (%s), want done", res.Status, res.Reason)
		}
		ds := h.deliveredOf(amp.TypeTaskDispatch)
		if len(ds) != 2 {
			t.Fatalf("%d dispatches, want 2", len(ds))
		}
		desc := ds[1].Dispatch().Description
		for _, want := range []string{"Changes were requested on the pull request on GitHub", "alice: Not yet.", "[major] Sources/BreathEngine.swift:42 use a monotonic clock (alice)"} {
			if !strings.Contains(desc, want) {
				t.Errorf("second dispatch lacks %q:\n%s", want, desc)
			}
		}
		if res.RejectCount != 0 {
			t.Errorf("reject_count %d, want 0 (count_rejections off)", res.RejectCount)
		}
		if len(f.pushes) != 2 || f.pushes[1].Lease != f.pushes[0].Commit {
			t.Errorf("pushes %+v, want the second with the first as its lease", f.pushes)
		}
		if len(f.merges) != 0 {
			t.Errorf("merged with delivery.merge off: %+v", f.merges)
		}
		if n := h.recordIDs()["github-review-"+testTaskID+"-21"]; n != 1 {
			t.Errorf("review 21 recorded %d times", n)
		}
	})

	t.Run("Counted", func(t *testing.T) {
		d := fullDelivery
		d.CountRejections, d.Merge = true, "off"
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withDelivery(d))
		commitsPerRound(h)
		f := &fakeGitHub{reviews: func(n int) []activities.TakenReview {
			if n == 1 {
				return []activities.TakenReview{{ID: 31, User: "bob", State: "CHANGES_REQUESTED", Body: "no"}}
			}
			return []activities.TakenReview{{ID: 32, User: "bob", State: "APPROVED"}}
		}}
		f.install(h)
		h.round(0)
		h.round(20 * time.Second)
		if res := h.run(); res.Status != task.StatusDone || res.RejectCount != 1 {
			t.Errorf("status %s, reject_count %d; want done with 1", res.Status, res.RejectCount)
		}
	})

	t.Run("ConflictRebased", func(t *testing.T) {
		d := fullDelivery
		d.Approvals = 0
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withDelivery(d))
		commitsPerRound(h)
		f := &fakeGitHub{conflicts: 1}
		f.install(h)
		h.round(0)
		h.round(20 * time.Second)
		res := h.run()
		if res.Status != task.StatusDone {
			t.Fatalf("status %s (%s), want done", res.Status, res.Reason)
		}
		ds := h.deliveredOf(amp.TypeTaskDispatch)
		if len(ds) != 2 || !strings.Contains(ds[1].Dispatch().Description, "rebase feature/watch-breath-v2 onto origin/main") {
			t.Fatalf("dispatches %d; the second should ask for a rebase", len(ds))
		}
		if len(f.merges) != 2 || f.merges[1].Commit != f.pushes[1].Commit || f.pushes[1].Lease != f.pushes[0].Commit {
			t.Errorf("merges %+v pushes %+v", f.merges, f.pushes)
		}
		if st := h.state(); st.MergeCommit != "m3rg3c0mm1t" {
			t.Errorf("merge commit %q", st.MergeCommit)
		}
		if res.RejectCount != 0 {
			t.Errorf("a conflict counted as a rejection")
		}
	})

	t.Run("NoRepository", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"), withDelivery(fullDelivery))
		f := &fakeGitHub{}
		f.install(h)
		h.checkBranch = func(activities.CheckBranchInput) (activities.CheckBranchResult, error) {
			return activities.CheckBranchResult{DefaultBranch: "main", Head: "abc"}, nil
		}
		res, _ := h.runRefused()
		if res.Status != task.StatusTerminated || !strings.Contains(res.Reason, "no repository for the pull request") {
			t.Errorf("status %s (%s), want refused", res.Status, res.Reason)
		}
	})

	t.Run("Off", func(t *testing.T) {
		h := newHarness(t, testPlan(amp.RiskLow, "S1"))
		f := &fakeGitHub{}
		f.install(h)
		h.round(0)
		if res := h.run(); res.Status != task.StatusDone {
			t.Fatalf("status %s", res.Status)
		}
		if f.targets+len(f.pushes)+len(f.syncs)+len(f.polls)+len(f.merges) != 0 {
			t.Errorf("delivery activities ran without delivery: %+v", f)
		}
	})
}

func TestGitHubPushRefused(t *testing.T) {
	d := fullDelivery
	d.PullRequest, d.Merge = "off", "off"
	h := newHarness(t, testPlan(amp.RiskLow, "S1"), withDelivery(d))
	f := &fakeGitHub{pushErr: func(n int) error {
		if n == 1 {
			return temporal.NewNonRetryableApplicationError("pushing feature/watch-breath-v2: [rejected] (stale info)", activities.ErrPush, nil)
		}
		return nil
	}}
	f.install(h)
	var asked task.State
	h.at(3*time.Second, func() {
		asked = h.state()
		h.decide("alice", task.OptRetryGitHub, "")
	})
	h.at(4*time.Second, func() { h.ack(amp.RoleReviewer) })
	h.at(5*time.Second, func() { h.verdict(amp.DecisionApproved, 0.95) })
	h.at(1*time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	if asked.Pending == nil || asked.Pending.Kind != task.KindGitHub || !strings.Contains(asked.LastError, "stale info") {
		t.Errorf("pending %+v, last error %q; want a github decision saying why", asked.Pending, asked.LastError)
	}
	if len(f.pushes) != 2 {
		t.Errorf("%d pushes, want the refused one and the retry", len(f.pushes))
	}
}

// TestCIFailureDetailReachesExecutor checks that what the CI provider
// says of a failure (GitHub's check output and log tail) is in the fix
// dispatch.
func TestCIFailureDetailReachesExecutor(t *testing.T) {
	h := newHarness(t, testPlan(amp.RiskLow, "S1"))
	const detail = "## test: failure\n- [failure] parse_test.go:12 token mismatch\nFailing step: go test ./...\nLog tail:\n--- FAIL: TestParse"
	h.ci = func(n int) activities.CIStatusResult {
		if n == 1 {
			return activities.CIStatusResult{State: activities.CIFailed, Failing: []string{"test"}, Detail: detail}
		}
		return activities.CIStatusResult{State: activities.CIPassed}
	}
	h.at(1*time.Second, func() { h.ack(amp.RoleExecutor) })
	h.at(2*time.Second, func() { h.result(amp.StatusComplete) })
	h.round(20 * time.Second)
	if res := h.run(); res.Status != task.StatusDone {
		t.Fatalf("status %s", res.Status)
	}
	ds := h.deliveredOf(amp.TypeTaskDispatch)
	if len(ds) != 2 || !strings.Contains(ds[1].Dispatch().Description, detail) {
		t.Fatalf("the fix dispatch lacks the CI output: %d dispatches", len(ds))
	}
}
