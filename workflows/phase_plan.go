package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
)

// check refuses a task whose plan or branch cannot be dispatched.
func (t *taskRun) check(ctx workflow.Context) (phase, error) {
	refused := t.takePolicy(ctx)
	// The first record: the plan and the policy in effect.
	// The client writes the same record when the start is taken
	// (FirstRecord): built alike, the store keeps one.
	t.record(ctx, planRecordID(t.In), ssot.KindEvent, t.In)
	if refused != nil {
		return t.refuse(errMessage(refused), "")
	}
	if i, err := dispatchProblem(t.In.TaskID, t.In.Plan, t.Plan, workflow.Now(ctx)); err != nil {
		return t.refuse(fmt.Sprintf("the dispatch of subtask %d would not be valid AMP: %s", i, strings.ReplaceAll(err.Error(), "\n", "; ")),
			fmt.Sprintf("plan.subtasks[%d]", i))
	}
	var out activities.CheckBranchResult
	err := t.gitCheck(ctx, acts.CheckBranch, activities.CheckBranchInput{
		Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch, Create: t.In.CreateBranch,
	}).Get(ctx, &out)
	if err != nil {
		return t.refuse(errMessage(err), branchField(err))
	}
	t.Default, t.GitHubRepo = out.DefaultBranch, out.GitHubRepo
	t.checkedHead, t.checkedAt = out.DefaultHead, workflow.Now(ctx)
	if err := t.pushTarget(ctx); err != nil {
		return t.refuse(errMessage(err), "")
	}
	return phaseApproval, nil
}

// approval holds the plan until an admin approves it, when the risk level
// (or the coordinator) asks for that. An approved task takes its branch's
// lease before its first dispatch and holds it until it ends.
func (t *taskRun) approval(ctx workflow.Context) (phase, error) {
	if planApproval(t.In.Policy, t.In) == task.HandlingAuto {
		t.addTimeline(ctx, task.TimelineEntry{Kind: "decision", Note: "plan approved automatically (risk " + string(t.In.Plan.RiskLevel) + ")"})
		if t.Base == "" && t.checkedHead != "" && t.checkedAt.Equal(workflow.Now(ctx)) {
			// Approved in the workflow task that checked the branch: the
			// head that check read is the head at the approval.
			t.Base = t.checkedHead
			return phaseLease, nil
		}
		return t.pinBase(ctx)
	}
	// The client may have started the task as dispatched (startStatus),
	// by a policy that approves the plan; this worker's does not.
	t.upsertAttributes(ctx)
	prompt := fmt.Sprintf("Approve the plan of %s (%s risk, %d subtasks) on %s@%s?",
		t.In.TaskID, t.In.Plan.RiskLevel, len(t.Plan), t.In.Plan.Repo, t.In.Plan.Branch)
	o, err := t.decideOn(ctx, task.KindPlanApproval, prompt, nil, optApprove, optRejectPlan)
	if err != nil || o == nil {
		return phaseApproval, err
	}
	switch o.Option {
	case decision.OptApprove:
		return t.pinBase(ctx)
	case task.OptReplan:
		// The plan changed under the question: ask again about the new one.
		return phaseApproval, nil
	}
	t.Reason = fmt.Sprintf("plan rejected by %s via %s%s", o.By, o.Channel, noteSuffix(o.Note))
	return phaseTerminate, nil
}

// planApproval is how policy p handles the plan of task in.
func planApproval(p task.Policy, in task.Input) task.Handling {
	return p.PlanApproval.For(in.Plan.RiskLevel).Stricter(in.Handling)
}

// pinBase records the default branch's head once the plan is approved:
// every result is diffed against it, and a branch that no longer descends
// from it is refused, so moving the default branch later hides nothing.
// A task approved again (a replan) keeps the base it has.
func (t *taskRun) pinBase(ctx workflow.Context) (phase, error) {
	if t.Base != "" {
		return phaseLease, nil
	}
	var out activities.CheckBranchResult
	err := t.gitCheck(ctx, acts.CheckBranch, activities.CheckBranchInput{
		Repo: t.In.Plan.Repo, Branch: t.In.Plan.Branch, Create: t.In.CreateBranch,
	}).Get(ctx, &out)
	if err != nil {
		t.Reason = "refused: " + errMessage(err)
		t.LastError = t.Reason
		return phaseTerminate, nil
	}
	t.Base = out.DefaultHead
	return phaseLease, nil
}

// refuse ends a start the check refuses: the task is terminated with
// reason, and its workflow fails with a task.ErrRefused naming field, so
// Temporal shows it failed and the client's Start takes its id again.
func (t *taskRun) refuse(reason, field string) (phase, error) {
	t.Reason = "refused: " + reason
	t.LastError = t.Reason
	t.Refused = &task.Refusal{Reason: t.Reason, Field: field, Restarts: t.In.Restarts}
	return phaseTerminate, nil
}

// branchField is the input field a failed branch check is about.
func branchField(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == activities.ErrNotWorkTree {
		return "plan.repo"
	}
	return "plan.branch"
}

// dispatchProblem is the first subtask of plan (its subtasks as
// replanned) whose dispatch would not be valid AMP, with amp's error.
func dispatchProblem(taskID string, plan amp.TaskDispatch, subtasks []amp.Subtask, now time.Time) (int, error) {
	for i := range subtasks {
		p := plan
		p.Subtasks = subtasks[i : i+1]
		probe := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, taskID, now, &p)
		if err := probe.Validate(); err != nil {
			return i, err
		}
	}
	return 0, nil
}

// CheckDispatches refuses, before a workflow exists, a start whose plan
// the task's check would refuse: a subtask whose dispatch would not be
// valid AMP. The error names the fields (plan.subtasks[i]…).
func CheckDispatches(in task.Input, now time.Time) error {
	id := in.TaskID
	if !task.ValidID(id) {
		id = fmt.Sprintf("T-%04d-000", now.Year()) // StartNext picks it later
	}
	i, err := dispatchProblem(id, in.Plan, in.Plan.Subtasks, now)
	if err == nil {
		return nil
	}
	at := fmt.Sprintf("plan.subtasks[%d]", i)
	var fields []amp.FieldError
	var ve *amp.ValidationError
	if errors.As(err, &ve) {
		for _, f := range ve.Fields {
			path := f.Path
			if rest, ok := strings.CutPrefix(path, "payload.subtasks[0]"); ok {
				path = at + rest
			} else if rest, ok := strings.CutPrefix(path, "payload"); ok {
				path = "plan" + rest
			}
			fields = append(fields, amp.FieldError{Path: path, Problem: f.Problem})
		}
	}
	if len(fields) == 0 {
		fields = []amp.FieldError{{Path: at, Problem: err.Error()}}
	}
	return &task.Error{Code: task.CodeInvalid, Fields: fields,
		Message: fmt.Sprintf("%s: its dispatch would not be valid AMP: %s", at, strings.ReplaceAll(err.Error(), "\n", "; "))}
}
