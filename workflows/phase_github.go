package workflows

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// The phases of delivery.*: only a task whose policy has delivery on
// enters them, so a task without it writes the history it always did.
const (
	phaseDeliver  phase = "deliver"   // push the accepted result; open or update the pull request
	phasePRReview phase = "pr_review" // mark the pull request ready; take GitHub's reviews
	phaseMerge    phase = "merge"     // merge after the final approval, with checks green
)

// githubState is what a task keeps of its work on GitHub.
type githubState struct {
	// Remote is the push URL, origin's when the task started.
	Remote string `json:"remote,omitempty"`
	// Pushed is the last commit pushed to the branch.
	Pushed string `json:"pushed,omitempty"`
	// The pull request; Number 0 until it is opened.
	Number int    `json:"number,omitempty"`
	URL    string `json:"url,omitempty"`
	NodeID string `json:"node_id,omitempty"`
	Draft  bool   `json:"draft,omitempty"`
	// ETag of the last reviews read; Taken the reviews acted on.
	ETag  string  `json:"etag,omitempty"`
	Taken []int64 `json:"taken,omitempty"`
	// Approvals are the logins that approved the pushed commit.
	Approvals []string `json:"approvals,omitempty"`
	// Wake is set by the webhook's signal: read the reviews now.
	Wake bool `json:"wake,omitempty"`
	// MergeRounds counts the rebase rounds of merge conflicts.
	MergeRounds int    `json:"merge_rounds,omitempty"`
	MergeCommit string `json:"merge_commit,omitempty"`
}

var optRetryGitHub = decision.Option{ID: task.OptRetryGitHub, Label: "Try GitHub again"}

func (t *taskRun) gh() *githubState {
	if t.GitHub == nil {
		t.GitHub = &githubState{}
	}
	return t.GitHub
}

// onGitHub takes the webhook's wake-ups.
func (t *taskRun) onGitHub(ctx workflow.Context, sel workflow.Selector) {
	sel.AddReceive(workflow.GetSignalChannel(ctx, task.SignalGitHubReview), func(c workflow.ReceiveChannel, _ bool) {
		var s task.GitHubReviewSignal
		c.Receive(ctx, &s)
		t.gh().Wake = true
	})
}

// ShortHeartbeatTimeout is the heartbeat timeout of the activities that
// reach GitHub (a push, the pull request's sync, reviews and merge) and
// of the merge queue's git work: an attempt whose worker died is tried
// again within seconds, not after its whole timeout.
const ShortHeartbeatTimeout = 10 * time.Second

// githubOptions bound the API calls.
func githubOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		// The activities heartbeat: one whose worker died is tried again
		// within seconds.
		HeartbeatTimeout: ShortHeartbeatTimeout,
		// GitHub down for long is the admins' problem, not a silent wait.
		ScheduleToCloseTimeout: 30 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second,
			MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrDeliveryConfig, activities.ErrPush,
				activities.ErrCommitMissing, activities.ErrNotWorkTree},
		},
	}
}

// pushTarget fixes the task's push remote when it starts, as the CI
// repository is: origin's URL then.
func (t *taskRun) pushTarget(ctx workflow.Context) error {
	if !t.pushes() {
		return nil
	}
	if t.In.Policy.Delivery.PullRequests() && t.GitHubRepo == "" {
		return fmt.Errorf("delivery.pull_request: the origin of %s is not on GitHub and ci.github.repo is not set: no repository for the pull request", t.In.Plan.Repo)
	}
	var out activities.PushTargetResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, githubOptions()), acts.PushTarget,
		activities.PushTargetInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo}).Get(ctx, &out)
	if err != nil {
		return err
	}
	t.gh().Remote = out.URL
	return nil
}

// pushes reports whether accepted results are pushed: with delivery.push,
// and always for a repository given by URL, where the branch lives only
// in this worker's mirror until it is.
func (t *taskRun) pushes() bool {
	return t.In.Policy.Delivery.Push || amp.RepoIsURL(t.In.Plan.Repo)
}

// afterResult is where an accepted result goes: to GitHub first when
// delivery is on.
func (t *taskRun) afterResult() phase {
	if t.pushes() {
		return phaseDeliver
	}
	return phaseCI
}

// afterReviews is where the last approved subtask goes: to GitHub's
// reviewers first when the task has a pull request.
func (t *taskRun) afterReviews() phase {
	if t.In.Policy.Delivery.PullRequests() {
		return phasePRReview
	}
	return phaseFinal
}

// afterFinal is where the final approval goes: to the merge when asked.
func (t *taskRun) afterFinal() phase {
	if t.In.Queue != nil {
		return phaseQueue
	}
	if t.In.Policy.Delivery.Merges() {
		return phaseMerge
	}
	return phaseDone
}

func (t *taskRun) githubActivity(ctx workflow.Context, fn, in, out any) (gaveWay bool, err error) {
	opts := githubOptions()
	if _, push := in.(activities.PushInput); push {
		opts.StartToCloseTimeout = 10 * time.Minute // a large first push
	}
	return t.runUntilGiveWay(ctx, func(ctx workflow.Context) workflow.Future {
		return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), fn, in)
	}, out)
}

// deliver pushes the accepted result and opens or updates the pull
// request, then goes on to CI.
func (t *taskRun) deliver(ctx workflow.Context) (phase, error) {
	if _, asked := t.decisions.Asking(task.KindGitHub); asked {
		return t.githubProblem(ctx, phaseDeliver, "")
	}
	gs := t.gh()
	if gs.Pushed != t.ResultCommit {
		var out activities.PushResult
		in := activities.PushInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch, Remote: gs.Remote,
			Commit: t.ResultCommit, Lease: gs.Pushed}
		gaveWay, err := t.githubActivity(ctx, acts.PushBranch, in, &out)
		if gaveWay {
			return phaseDeliver, nil
		}
		if err != nil {
			return t.githubProblem(ctx, phaseDeliver, fmt.Sprintf("Pushing %s of %s failed: %s.", t.In.Plan.Branch, t.In.TaskID, errMessage(err)))
		}
		gs.Pushed, gs.Approvals = out.Commit, nil
		t.record(ctx, fmt.Sprintf("push-%s-%s", t.In.TaskID, shortHash(out.Commit)), ssot.KindEvent,
			map[string]any{"event": "push", "branch": t.In.Plan.Branch, "commit": out.Commit, "replaced": in.Lease})
		t.addTimeline(ctx, task.TimelineEntry{Kind: "github", Note: "pushed " + shortHash(out.Commit) + " to " + t.In.Plan.Branch})
	}
	if !t.In.Policy.Delivery.PullRequests() {
		return phaseCI, nil
	}
	if next, ok, err := t.syncPull(ctx, phaseDeliver, false); !ok || err != nil {
		return next, err
	}
	return phaseCI, nil
}

// syncPull opens or updates the pull request; ready marks it ready.
func (t *taskRun) syncPull(ctx workflow.Context, here phase, ready bool) (phase, bool, error) {
	gs := t.gh()
	base := t.Default
	if t.In.Queue != nil && t.In.Queue.Target != "" {
		base = t.In.Queue.Target // the queue merges the pull request into its target
	}
	in := activities.PullRequestInput{TaskID: t.In.TaskID, GitHubRepo: t.GitHubRepo, Branch: t.In.Plan.Branch, Base: base,
		Number: gs.Number, Draft: t.In.Policy.Delivery.PullRequest == "draft", Description: t.In.Plan.Description,
		Criteria: t.In.Plan.AcceptanceCriteria, Done: t.Index, Ready: ready}
	for _, st := range t.Plan {
		in.Subtasks = append(in.Subtasks, st.Description)
	}
	var out activities.PullRequestResult
	gaveWay, err := t.githubActivity(ctx, acts.SyncPullRequest, in, &out)
	if gaveWay {
		return here, false, nil
	}
	if err != nil {
		next, err := t.githubProblem(ctx, here, fmt.Sprintf("Keeping the pull request of %s failed: %s.", t.In.TaskID, errMessage(err)))
		return next, false, err
	}
	event := "updated"
	switch {
	case gs.Number == 0:
		event = "opened"
		if !out.Created {
			event = "found"
		}
	case ready && gs.Draft:
		event = "ready"
	}
	gs.Number, gs.URL, gs.NodeID, gs.Draft = out.Number, out.URL, out.NodeID, out.Draft
	t.record(ctx, fmt.Sprintf("pull-%s-%d-%d-%s", t.In.TaskID, out.Number, t.Rounds, event), ssot.KindEvent,
		map[string]any{"event": "pull_request_" + event, "number": out.Number, "url": out.URL, "commit": gs.Pushed, "draft": out.Draft})
	if event != "updated" {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "github", Note: "pull request " + event + ": " + out.URL})
		if t.In.Policy.StatusUpdates {
			t.notify(notify.Status, queuedNotice{Status: t.Status, Text: "pull request " + event + ": " + out.URL})
		}
	}
	return here, true, nil
}

// prReview marks the pull request ready and takes GitHub's reviews:
// "changes requested" is a rejection, and the task waits for the
// approvals delivery.github.approvals asks for, reading the reviews every
// delivery.github.poll (sooner when the webhook wakes it).
func (t *taskRun) prReview(ctx workflow.Context) (phase, error) {
	if _, asked := t.decisions.Asking(task.KindGitHub); asked {
		return t.githubProblem(ctx, phasePRReview, "")
	}
	d, gs := t.In.Policy.Delivery, t.gh()
	if gs.Draft || gs.Number == 0 {
		if next, ok, err := t.syncPull(ctx, phasePRReview, true); !ok || err != nil {
			return next, err
		}
	}
	t.setStatus(ctx, task.StatusInReview, "GitHub review")
	for {
		var out activities.ReviewsResult
		in := activities.ReviewsInput{TaskID: t.In.TaskID, GitHubRepo: t.GitHubRepo, Number: gs.Number, ETag: gs.ETag, Taken: gs.Taken, Head: gs.Pushed}
		gaveWay, err := t.githubActivity(ctx, acts.PullReviews, in, &out)
		if gaveWay {
			return phasePRReview, nil
		}
		if err != nil {
			return t.githubProblem(ctx, phasePRReview, fmt.Sprintf("Reading the reviews of %s failed: %s.", gs.URL, errMessage(err)))
		}
		gs.ETag = out.ETag
		var changes []activities.TakenReview
		for _, r := range out.Reviews {
			gs.Taken = append(gs.Taken, r.ID)
			t.record(ctx, fmt.Sprintf("github-review-%s-%d", t.In.TaskID, r.ID), ssot.KindEvent,
				map[string]any{"event": "github_review", "review": r, "pull_request": gs.Number, "commit": gs.Pushed})
			t.addTimeline(ctx, task.TimelineEntry{Kind: "github", Note: fmt.Sprintf("GitHub review by %s: %s", r.User, strings.ToLower(r.State))})
			switch r.State {
			case "CHANGES_REQUESTED":
				changes = append(changes, r)
			case "APPROVED":
				if !slices.Contains(gs.Approvals, r.User) {
					gs.Approvals = append(gs.Approvals, r.User)
				}
			}
		}
		if len(changes) > 0 {
			return t.githubRejection(ctx, changes)
		}
		if len(gs.Approvals) >= d.Approvals {
			return phaseFinal, nil
		}
		gs.Wake = false
		poll := d.Poll
		if poll <= 0 {
			poll = time.Minute
		}
		if _, err := t.waitFor(ctx, workflow.Now(ctx).Add(poll), func() bool { return gs.Wake }); err != nil {
			return phasePRReview, err
		}
		if t.mustGiveWay(ctx) {
			return phasePRReview, nil
		}
	}
}

// githubRejection sends GitHub's requested changes back to the executor
// as a review round; they count toward the lock only when configured.
func (t *taskRun) githubRejection(ctx workflow.Context, reviews []activities.TakenReview) (phase, error) {
	t.Index = len(t.Plan) - 1
	t.RejectedCommit = t.gh().Pushed
	t.FixNote, t.FixRefs = githubRejectionNote(reviews), nil
	if !t.In.Policy.Delivery.CountRejections {
		return phaseDispatch, nil
	}
	t.RejectCount++
	t.SubtaskRejects++
	t.upsertAttributes(ctx)
	if t.RejectCount > t.In.Policy.MaxRejects {
		return phaseLock, nil
	}
	return phaseDispatch, nil
}

// githubRejectionNote tells the executor what the GitHub reviewers asked.
func githubRejectionNote(reviews []activities.TakenReview) string {
	var b strings.Builder
	b.WriteString("Changes were requested on the pull request on GitHub. Fix these issues:")
	for _, r := range reviews {
		if body := strings.TrimSpace(r.Body); body != "" {
			b.WriteString("\n- [major] " + r.User + ": " + oneLineNote(body))
		}
		for _, c := range r.Comments {
			b.WriteString("\n- " + IssueLine(amp.Issue{Severity: amp.SeverityMajor, File: c.Path, Line: c.Line, Description: oneLineNote(c.Body) + " (" + c.User + ")"}))
		}
	}
	return b.String()
}

func oneLineNote(s string) string { return strings.Join(strings.Fields(s), " ") }

// githubProblem asks the admins what to do about GitHub refusing the
// task's push, pull request or merge: try again, or terminate.
func (t *taskRun) githubProblem(ctx workflow.Context, here phase, desc string) (phase, error) {
	if desc != "" {
		t.LastError = desc
	}
	t.setStatus(ctx, task.StatusAwaitingAdmin, "GitHub problem")
	o, err := t.decideOn(ctx, task.KindGitHub, desc+" Try again or terminate?", nil, optRetryGitHub, optTerminate)
	if err != nil || o == nil {
		return here, err
	}
	if o.Option == task.OptRetryGitHub {
		t.LastError = ""
		if here == phaseMerge {
			t.gh().MergeRounds = 0
		}
		return here, nil
	}
	return t.terminatedBy(o), nil
}
