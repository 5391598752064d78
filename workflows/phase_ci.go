package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// ciGate reads CI for the result's commit: passed goes to review, failed
// goes back to the executor to fix, too many fix rounds go to the admins.
func (t *taskRun) ciGate(ctx workflow.Context) (phase, error) {
	if !t.In.Policy.CI {
		t.CI = nil
		return phaseReview, nil
	}
	if _, asked := t.decisions.Asking(task.KindCIExhausted); asked {
		// Entered again with the question asked: go back to it.
		return t.ciEscalation(ctx, "")
	}
	t.setStatus(ctx, task.StatusCICheck, "")
	r := t.Result.Result()
	if t.CIDeadline.IsZero() {
		// A new round: the first reading of this result.
		t.CIDeadline = workflow.Now(ctx).Add(t.In.Policy.CITimeout)
		t.CIRound++
	}
	subtask := ""
	if s := t.subtask(); s != nil {
		subtask = s.SubtaskID
	}
	for {
		var st activities.CIStatusResult
		in := activities.CIStatusInput{TaskID: t.In.TaskID, Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch, Commit: r.CommitHash, GitHubRepo: t.GitHubRepo,
			Round: t.CIRound, Subtask: subtask, Last: !workflow.Now(ctx).Before(t.CIDeadline)}
		gaveWay, err := t.runUntilGiveWay(ctx, func(ctx workflow.Context) workflow.Future {
			return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, ciOptions(t.In.Policy)), acts.CIStatus, in)
		}, &st)
		if gaveWay || t.mustGiveWay(ctx) {
			return phaseCI, nil
		}
		if err != nil {
			t.LastError = "reading CI: " + errMessage(err)
			return t.ciEscalation(ctx, "CI cannot be read: "+errMessage(err))
		}
		t.CI = newCIReading(st)
		switch st.State {
		case activities.CIPassed, activities.CINone:
			t.CIDeadline = time.Time{}
			return phaseReview, nil
		case activities.CIFailed:
			t.CIDeadline = time.Time{}
			if t.SubtaskCI >= t.In.Policy.MaxCIRounds {
				return t.ciEscalation(ctx, fmt.Sprintf("CI failed again after %d fix rounds: %s", t.SubtaskCI, strings.Join(st.Failing, ", ")))
			}
			t.SubtaskCI++
			t.CIRounds++
			t.FixNote = fmt.Sprintf("CI failed on %s (fix round %d of %d). Failing checks: %s. Fix CI; this is not a rejection.",
				shortHash(r.CommitHash), t.SubtaskCI, t.In.Policy.MaxCIRounds, strings.Join(st.Failing, ", "))
			if st.Detail != "" {
				t.FixNote += "\nOutput:\n" + st.Detail
			}
			t.FixRefs = []string{t.Result.MsgID}
			return phaseDispatch, nil
		}
		if !workflow.Now(ctx).Before(t.CIDeadline) {
			t.CI.State = ssot.CIRoundTimedOut
			return t.ciEscalation(ctx, fmt.Sprintf("CI was still pending after %s", task.FormatDuration(t.In.Policy.CITimeout)))
		}
		wake := workflow.Now(ctx).Add(t.In.Policy.CIPollInterval)
		if wake.After(t.CIDeadline) {
			wake = t.CIDeadline
		}
		if _, err := t.waitFor(ctx, wake, func() bool { return false }); err != nil {
			return phaseCI, err
		}
		if t.mustGiveWay(ctx) {
			return phaseCI, nil
		}
	}
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "the branch head"
	}
	return h
}

// ciEscalation suspends the task on a CI problem the executor cannot fix
// by itself.
func (t *taskRun) ciEscalation(ctx workflow.Context, desc string) (phase, error) {
	t.CIDeadline = time.Time{}
	t.setStatus(ctx, task.StatusSuspended, "CI failure")
	esc := func() *amp.Message {
		return t.escalate(ctx, amp.EscCIFailure, amp.SeverityCritical, amp.RoleCoordinator, desc, []string{t.DispatchID, t.Result.MsgID},
			"Redispatch with guidance", "Check CI again", "Send to review without CI", "Terminate the task")
	}
	o, err := t.decideOn(ctx, task.KindCIExhausted, desc, esc, optGuide, optRetryCI, optSkipCI, optTerminate)
	if err != nil || o == nil {
		return phaseCI, err
	}
	switch o.Option {
	case task.OptRedispatch:
		t.SubtaskCI = 0
		t.FixNote, t.FixRefs = "Admin guidance: "+o.Note, []string{t.Result.MsgID}
		return phaseDispatch, nil
	case task.OptRetryCI:
		t.SubtaskCI = 0
		return phaseCI, nil
	case task.OptSkipCI:
		return phaseReview, nil
	}
	return t.terminatedBy(o), nil
}
