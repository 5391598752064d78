package delivery

import (
	"context"
	"fmt"
	"path/filepath"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp"
)

// RolePlanner is the role of a goal's planner runs in the fleet view and
// in their checkout's and home's names.
const RolePlanner amp.Role = "planner"

// PlanRun is one run of a goal's planner (goals.planner): its prompt, and
// the commit of the goal's target it reads.
type PlanRun struct {
	// Subject names the run's checkout, home and slot: the goal's
	// workflow id.
	Subject string
	Repo    string
	Commit  string
	Prompt  string
	System  string
	// SessionID resumes the planner's session; empty starts one.
	SessionID string
}

// PlanOutcome is what a planner's run ended with: its final message,
// its session and its cost.
type PlanOutcome struct {
	Text      string
	SessionID string
	CostUSD   float64
}

// Plan runs the goals' planner on in: as a reviewer runs, in a detached
// checkout of in.Commit removed after the run, sandboxed unless
// goals.planner.sandbox is off, in a slot of the worker's, with neither
// the tool hook, nor ampflow's MCP server, nor a credential for the API.
// A run that fails for good is an ErrDelivery failure.
func (d *Delivery) Plan(ctx context.Context, in PlanRun) (PlanOutcome, error) {
	a := d.Planner
	if a.Runner == "" {
		return PlanOutcome{}, failed("this worker has no planner (goals.planner.runner)", "", nil)
	}
	if a.WorkDir == "" {
		return PlanOutcome{}, failed("the worker has no data_dir for the planner's checkout", "", nil)
	}
	if activity.IsActivity(ctx) {
		defer keepAlive(ctx, in.Subject)()
	}
	_, release, err := d.Slots.Take(ctx, SlotRun{TaskID: in.Subject, Role: RolePlanner, Runner: a.Runner}, func(int) {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, "waiting for a runner slot")
		}
	})
	if err != nil {
		return PlanOutcome{}, fmt.Errorf("waiting for a runner slot for the planner of %s: %w", in.Subject, err)
	}
	defer release()
	repo, err := d.Git.Local(ctx, in.Repo, true)
	if err != nil {
		return PlanOutcome{}, failed(fmt.Sprintf("fetching the repository of %s: %v", in.Subject, err), "", err)
	}
	dir := filepath.Join(a.WorkDir, "worktrees", in.Subject+"-plan")
	if err := runner.RemoveWorktree(ctx, repo, dir); err != nil {
		return PlanOutcome{}, fmt.Errorf("removing the planner's old checkout of %s: %w", in.Subject, err)
	}
	if err := runner.AddDetachedWorktree(ctx, repo, dir, in.Commit); err != nil {
		return PlanOutcome{}, failed(fmt.Sprintf("checking out %s for the planner of %s: %v", in.Commit, in.Subject, err), "", err)
	}
	defer func() { _ = runner.RemoveWorktree(context.WithoutCancel(ctx), repo, dir) }()
	spec := runner.Spec{
		Runner: a.Runner, Command: a.Command, Model: a.Model, Dir: dir,
		Prompt: in.Prompt, SystemPrompt: in.System, SessionID: in.SessionID,
		Env:         child.Env(nil, a.Env, EnvTaskID+"="+in.Subject, EnvRole+"="+string(RolePlanner)),
		Timeout:     a.Timeout,
		IdleTimeout: a.IdleTimeout,
		MaxCostUSD:  d.PlannerMaxCostUSD,
		PriceUSD:    func(u runner.Usage) float64 { return d.Pricing.Price(a.Model, u.InputTokens, u.OutputTokens) },
		PIDDir:      activities.PIDDir(a.WorkDir),
	}
	spec.Secrets = envSecrets(spec.Env)
	if activity.IsActivity(ctx) {
		// Reaped after a crash, and its attempt failed at once; no task
		// to tell (RecoverRuns skips a run without one).
		info := activity.GetInfo(ctx)
		spec.Owner = &runner.RunOwner{Role: string(RolePlanner), WorkflowID: info.WorkflowExecution.ID,
			RunID: info.WorkflowExecution.RunID, ActivityID: info.ActivityID}
	}
	if a.Sandbox {
		if err := d.sandbox(ctx, a, RolePlanner, in.Subject, repo, dir, &spec); err != nil {
			return PlanOutcome{}, failed(fmt.Sprintf("confining the planner (goals.planner.sandbox): %v", err), "", err)
		}
		netw, err := d.network(taskRun{workDir: a.WorkDir, taskID: in.Subject, role: RolePlanner}, "", &spec)
		if err != nil {
			return PlanOutcome{}, failed(fmt.Sprintf("giving the planner its network (goals.planner.sandbox): %v", err), "", err)
		}
		defer netw.Close()
		if netw != nil && netw.meter != nil {
			netw.meter.SetCap(d.PlannerMaxCostUSD)
		}
	}
	out, err := runner.Run(ctx, spec, func(runner.Event) {})
	if err != nil {
		return PlanOutcome{}, fmt.Errorf("running the planner (%s) of %s: %w", a.Runner, in.Subject, err)
	}
	res := PlanOutcome{Text: out.Text, SessionID: out.SessionID, CostUSD: out.Usage.CostUSD}
	if out.Succeeded() {
		return res, nil
	}
	why := string(out.Reason)
	if out.Failure != nil {
		why = out.Failure.Message
	}
	summary := fmt.Sprintf("the planner (%s) of %s did not finish: %s", a.Runner, in.Subject, clip(why, 300))
	if out.Failure != nil && out.Failure.Class == runner.FailureNetwork {
		// Likely gone on the next try: the activity's policy runs it again.
		return res, temporal.NewApplicationError(summary, activities.ErrModelConnection,
			activities.DeliveryFailure{Class: string(runner.FailureNetwork), Summary: summary, Stderr: d.stderrTail(out.Stderr)})
	}
	return res, failed(summary, d.stderrTail(out.Stderr), nil)
}
