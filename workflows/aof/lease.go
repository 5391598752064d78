package aof

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/amp/refusal"
	"github.com/ampflow/ampflow/amp/task"
)

func leaseCtx(ctx workflow.Context, attempts int32) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: attempts},
	})
}

// acquireLease takes the task's lease for the agent a dispatch names;
// another agent's holding refuses the dispatch.
func (r *aofRun) acquireLease(ctx workflow.Context, agent string, ttl time.Duration) (string, error) {
	var acts *aofacts.AOFLeases
	var out aofacts.AOFLeaseResult
	in := aofacts.AOFLeaseInput{Key: LeaseKey(r.Task.TaskID), AgentID: agent, TTL: ttl}
	if err := workflow.ExecuteActivity(leaseCtx(ctx, 3), acts.AcquireAOFLease, in).Get(ctx, &out); err != nil {
		return "", refusal.New(task.CodeUnavailable, "taking the lease %s for %s: %v", in.Key, agent, err)
	}
	if out.Holder != "" {
		return "", refusal.New(CodeLeaseHeld, "the lease %s is held by %s: task %s is not dispatched to %s", in.Key, out.Holder, r.Task.TaskID, agent)
	}
	return out.LeaseID, nil
}

// renewLease renews the run's lease on a heartbeat; a failure is logged,
// not fatal: the run goes on, and the lease's own timer frees it at last.
func (r *aofRun) renewLease(ctx workflow.Context, agent string) {
	if r.Task.LeaseID == "" {
		return
	}
	var acts *aofacts.AOFLeases
	in := aofacts.AOFLeaseInput{LeaseID: r.Task.LeaseID, AgentID: agent, TTL: time.Duration(r.Task.TTLMs) * time.Millisecond}
	if err := workflow.ExecuteActivity(leaseCtx(ctx, 3), acts.RenewAOFLease, in).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("renewing the lease of an AOF run", "task", r.Task.TaskID, "lease", in.LeaseID, "error", err)
	}
}

// dropLease queues the run's lease for release with the next save.
func (r *aofRun) dropLease() {
	if r.Task.LeaseID == "" {
		return
	}
	agent := ""
	if r.Task.Run != nil {
		agent = r.Task.Run.AgentID
	}
	r.releases = append(r.releases, aofacts.AOFLeaseInput{LeaseID: r.Task.LeaseID, AgentID: agent})
	r.Task.LeaseID = ""
	r.dirty = true
}

// releaseLeases gives up the queued leases; a failure is logged, and the
// lease's own timer frees it at last.
func releaseLeases(ctx workflow.Context, taskID string, ls []aofacts.AOFLeaseInput) {
	var acts *aofacts.AOFLeases
	for _, in := range ls {
		if err := workflow.ExecuteActivity(leaseCtx(ctx, 5), acts.ReleaseAOFLease, in).Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("releasing the lease of an AOF run", "task", taskID, "lease", in.LeaseID, "error", err)
		}
	}
}
