package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/notify"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

var errNotConfigured = errors.New("not configured")

// CheckBranch refuses a dispatch to a repository or branch that cannot take it.
func (a *Activities) CheckBranch(ctx context.Context, in CheckBranchInput) (CheckBranchResult, error) {
	if a.Git == nil {
		return CheckBranchResult{}, temporal.NewNonRetryableApplicationError("git checks: "+errNotConfigured.Error(), ErrNotWorkTree, nil)
	}
	res, err := a.Git.CheckBranch(ctx, in)
	if err != nil {
		return res, err
	}
	if in.Repo, err = a.Git.Local(ctx, in.Repo, false); err != nil {
		return res, err
	}
	return res, a.checkRunnerBranch(ctx, in)
}

// CheckResult compares an executor's result with what git shows.
func (a *Activities) CheckResult(ctx context.Context, in CheckResultInput) (CheckResultOutput, error) {
	if a.Git == nil {
		return CheckResultOutput{}, temporal.NewNonRetryableApplicationError("git checks: "+errNotConfigured.Error(), ErrNotWorkTree, nil)
	}
	return a.Git.CheckResult(ctx, in)
}

// CIStatus reads the CI state of a commit; with no provider it is CINone.
// With in.Round and a.CIRounds set, the reading is kept as the round's.
func (a *Activities) CIStatus(ctx context.Context, in CIStatusInput) (CIStatusResult, error) {
	res := CIStatusResult{State: CINone}
	if a.CI != nil {
		var err error
		if res, err = a.CI.Status(ctx, in); err != nil {
			return res, err
		}
	}
	if in.Round > 0 && a.CIRounds != nil {
		if err := ssot.SaveCIRound(ctx, a.CIRounds, in.TaskID, ciRound(in, res), time.Now()); err != nil {
			return CIStatusResult{}, err
		}
	}
	return res, nil
}

// ciRound is the round a reading makes.
func ciRound(in CIStatusInput, res CIStatusResult) ssot.CIRound {
	state := string(res.State)
	if res.State == CIPending && in.Last {
		state = ssot.CIRoundTimedOut
	}
	commit := res.Commit
	if commit == "" {
		commit = in.Commit
	}
	return ssot.CIRound{Round: in.Round, Subtask: in.Subtask, Commit: commit, State: state,
		Failing: res.Failing, Checks: res.Checks, Log: res.Detail, LogURL: res.LogURL, LogKept: res.LogKept}
}

// Record writes records and the task's state into the SSOT.
func (a *Activities) Record(ctx context.Context, in RecordInput) (RecordResult, error) {
	if a.Store == nil {
		return RecordResult{}, nil
	}
	return a.Store.Record(ctx, in)
}

// Deliver hands a message to the executor or reviewer. In pull mode
// (no Deliverer) agents read their inbox, so there is nothing to do.
func (a *Activities) Deliver(ctx context.Context, in DeliverInput) (DeliverResult, error) {
	if a.Delivery == nil {
		return DeliverResult{Mode: config.AgentModePull}, nil
	}
	return a.Delivery.Deliver(ctx, in)
}

// Notify tells admins about a decision or a status change.
func (a *Activities) Notify(ctx context.Context, in notify.Input) (notify.Result, error) {
	if a.Notifier == nil {
		return notify.Result{}, nil
	}
	return notify.Result{}, a.Notifier.Notify(ctx, in)
}

// PolicyInput asks for the policy a new task runs by.
type PolicyInput struct {
	TaskID string `json:"task_id"`
}

// PolicyResult is the worker's policy.
type PolicyResult struct {
	Policy task.Policy `json:"policy"`
}

// TaskPolicy returns the policy of the worker's configuration, which a new
// task runs by whatever the client that started it had configured.
func (a *Activities) TaskPolicy(_ context.Context, in PolicyInput) (PolicyResult, error) {
	if a.Policy == nil {
		return PolicyResult{}, temporal.NewNonRetryableApplicationError(
			"task "+in.TaskID+": this worker has no task policy", ErrNoPolicy, nil)
	}
	return PolicyResult{Policy: *a.Policy}, nil
}
