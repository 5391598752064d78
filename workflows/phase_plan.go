package workflows

import (
	"fmt"
	"strings"

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
	t.record(ctx, PlanRecordID(t.In.TaskID), ssot.KindEvent, t.In)
	if refused != nil {
		t.Reason = "refused: " + errMessage(refused)
		t.LastError = t.Reason
		return phaseTerminate, nil
	}
	for i := range t.Plan {
		p := t.In.Plan
		p.Subtasks = t.Plan[i : i+1]
		probe := amp.NewMessage(amp.RoleCoordinator, amp.RoleExecutor, t.In.TaskID, workflow.Now(ctx), &p)
		if err := probe.Validate(); err != nil {
			t.Reason = fmt.Sprintf("refused: the dispatch of subtask %d would not be valid AMP: %s", i, strings.ReplaceAll(err.Error(), "\n", "; "))
			return phaseTerminate, nil
		}
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
	t.Default, t.GitHubRepo = out.DefaultBranch, out.GitHubRepo
	t.checkedHead, t.checkedAt = out.DefaultHead, workflow.Now(ctx)
	if err := t.pushTarget(ctx); err != nil {
		t.Reason = "refused: " + errMessage(err)
		t.LastError = t.Reason
		return phaseTerminate, nil
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
