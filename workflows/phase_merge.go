package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
)

// merge merges the pull request once its head's checks are green; a
// conflict is a rebase round for the executor.
func (t *taskRun) merge(ctx workflow.Context) (phase, error) {
	if _, asked := t.decisions.Asking(task.KindGitHub); asked {
		return t.githubProblem(ctx, phaseMerge, "")
	}
	gs := t.gh()
	if gs.MergeCommit != "" {
		return phaseDone, nil
	}
	if t.In.Policy.CI {
		next, green, err := t.mergeChecks(ctx)
		if !green || err != nil {
			return next, err
		}
	}
	var out activities.MergeResult
	in := activities.MergeInput{TaskID: t.In.TaskID, GitHubRepo: t.GitHubRepo, Number: gs.Number, Commit: gs.Pushed,
		Method: t.In.Policy.Delivery.Merge, Title: fmt.Sprintf("%s (#%d)", pullTitleOf(t.In.Plan.Description, t.In.TaskID), gs.Number)}
	gaveWay, err := t.githubActivity(ctx, acts.MergePullRequest, in, &out)
	if gaveWay {
		return phaseMerge, nil
	}
	if err != nil {
		return t.githubProblem(ctx, phaseMerge, fmt.Sprintf("Merging %s failed: %s.", gs.URL, errMessage(err)))
	}
	if out.Conflict != "" {
		gs.MergeRounds++
		t.record(ctx, fmt.Sprintf("merge-conflict-%s-%s", t.In.TaskID, shortHash(gs.Pushed)), ssot.KindEvent,
			map[string]any{"event": "merge_conflict", "pull_request": gs.Number, "commit": gs.Pushed, "detail": out.Conflict})
		if gs.MergeRounds > t.In.Policy.MaxCIRounds {
			return t.githubProblem(ctx, phaseMerge, fmt.Sprintf("%s still cannot be merged after %d rebase rounds: %s.", gs.URL, gs.MergeRounds-1, out.Conflict))
		}
		t.addTimeline(ctx, task.TimelineEntry{Kind: "github", Note: "merge conflict: the executor rebases"})
		t.Index = len(t.Plan) - 1
		t.RejectedCommit = ""
		t.FixNote = fmt.Sprintf("The pull request %s cannot be merged into %s: the branch conflicts with it (rebase round %d of %d). "+
			"Fetch origin, rebase %s onto origin/%s, resolve the conflicts, keep the work's intent, and report the rebased commit. This is not a rejection.",
			gs.URL, t.Default, gs.MergeRounds, t.In.Policy.MaxCIRounds, t.In.Plan.Branch, t.Default)
		t.FixRefs = nil
		return phaseDispatch, nil
	}
	gs.MergeCommit = out.SHA
	t.record(ctx, fmt.Sprintf("merge-%s-%d", t.In.TaskID, gs.Number), ssot.KindEvent,
		map[string]any{"event": "merge", "pull_request": gs.Number, "url": gs.URL, "head": gs.Pushed, "merge_commit": out.SHA, "method": in.Method})
	t.addTimeline(ctx, task.TimelineEntry{Kind: "github", Note: "merged " + gs.URL + " as " + shortHash(out.SHA)})
	return phaseDone, nil
}

// mergeChecks waits for the head's checks: green goes on, failing asks
// the admins.
func (t *taskRun) mergeChecks(ctx workflow.Context) (phase, bool, error) {
	gs := t.gh()
	if t.CIDeadline.IsZero() {
		t.CIDeadline = workflow.Now(ctx).Add(t.In.Policy.CITimeout)
	}
	for {
		var st activities.CIStatusResult
		in := activities.CIStatusInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch, Commit: gs.Pushed, GitHubRepo: t.GitHubRepo}
		gaveWay, err := t.runUntilGiveWay(ctx, func(ctx workflow.Context) workflow.Future {
			return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ciOptions(t.In.Policy)), acts.CIStatus, in)
		}, &st)
		if gaveWay {
			return phaseMerge, false, nil
		}
		switch {
		case err != nil:
			t.CIDeadline = time.Time{}
			next, err := t.githubProblem(ctx, phaseMerge, "CI of the merge cannot be read: "+errMessage(err)+".")
			return next, false, err
		case st.State == activities.CIPassed || st.State == activities.CINone:
			t.CIDeadline = time.Time{}
			return phaseMerge, true, nil
		case st.State == activities.CIFailed:
			t.CIDeadline = time.Time{}
			next, err := t.githubProblem(ctx, phaseMerge, "Checks fail on "+shortHash(gs.Pushed)+", so it is not merged: "+strings.Join(st.Failing, ", ")+".")
			return next, false, err
		}
		if !workflow.Now(ctx).Before(t.CIDeadline) {
			t.CIDeadline = time.Time{}
			next, err := t.githubProblem(ctx, phaseMerge, "Checks were still pending after "+task.FormatDuration(t.In.Policy.CITimeout)+".")
			return next, false, err
		}
		wake := workflow.Now(ctx).Add(t.In.Policy.CIPollInterval)
		if wake.After(t.CIDeadline) {
			wake = t.CIDeadline
		}
		if _, err := t.waitFor(ctx, wake, func() bool { return false }); err != nil {
			return phaseMerge, false, err
		}
		if t.mustGiveWay(ctx) {
			return phaseMerge, false, nil
		}
	}
}

func pullTitleOf(desc, taskID string) string {
	title, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	if r := []rune(title); len(r) > 72 {
		title = string(r[:71]) + "…"
	}
	if title == "" {
		return taskID
	}
	return title
}
