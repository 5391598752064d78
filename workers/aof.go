package workers

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/sdk/worker"

	aofacts "github.com/ampflow/ampflow/activities/aof"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/config"
	aofapi "github.com/ampflow/ampflow/integrations/aof"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/workflows/aof"
	leasewf "github.com/ampflow/ampflow/workflows/lease"
)

// registerAOF registers the AOF task workflow and its activities.
func registerAOF(w worker.Worker, o Options, parts *Parts) {
	w.RegisterWorkflowWithOptions(aof.TaskWorkflow, aof.RegisterOptions())
	w.RegisterWorkflowWithOptions(aof.AgentReviewWorkflow, aof.RegisterAgentReviewOptions())
	acts := &aofacts.AOF{Store: parts.Store, DataDir: o.Config.AOF.DataDir}
	if parts.export != nil {
		acts.Written = parts.export.mark
	}
	w.RegisterActivity(acts)
	leases := &aofacts.AOFLeases{}
	if parts.Tasks != nil && parts.Tasks.Temporal != nil {
		leases.Leases = aofLeases{&leasewf.Client{Temporal: parts.Tasks.Temporal, TaskQueue: o.Config.Temporal.TaskQueue, DecisionKey: parts.Tasks.DecisionKey}}
	}
	w.RegisterActivity(leases)
}

// addAOF serves AOF/1 on the API.
func addAOF(api *httpapi.Server, o Options, parts *Parts, log *slog.Logger) {
	if parts.Store == nil || parts.Tasks == nil || parts.Tasks.Temporal == nil {
		return
	}
	tasks := &aof.Client{Temporal: parts.Tasks.Temporal, TaskQueue: o.Config.Temporal.TaskQueue, DecisionKey: parts.Tasks.DecisionKey}
	if o.Config.AOF.Review == config.AOFReviewAgent {
		tasks.Reviewer = &aof.AgentReviewer{Repo: o.Config.AOF.Repo, Branch: o.Config.AOF.Branch}
	}
	events := &aofacts.AOFEventLog{Store: parts.Store, DataDir: o.Config.AOF.DataDir}
	aofapi.Register(api, aofapi.Options{Tasks: tasks, Store: parts.Store, Events: events, DataDir: o.Config.AOF.DataDir, Logger: log})
}

// aofLeases gives the AOF tasks' runs the lease room's leases: a
// dispatched run holds the lease of aof/<taskId>.
type aofLeases struct{ c *leasewf.Client }

// leaseSeconds is a run's heartbeat life as a lease TTL, within the
// lease room's bounds.
func leaseSeconds(ttl time.Duration) int {
	s := int((ttl + time.Second - 1) / time.Second)
	return min(max(s, int(lease.MinTTL/time.Second)), int(lease.MaxTTL/time.Second))
}

func (l aofLeases) AcquireLease(ctx context.Context, key, agent string, ttl time.Duration) (string, string, error) {
	res, err := l.c.Acquire(ctx, key, lease.AcquireRequest{AgentID: agent, TTLSeconds: leaseSeconds(ttl)})
	if err != nil {
		return "", "", refusedLease(err)
	}
	if res.Conflict != nil {
		return "", res.Conflict.Holder, nil
	}
	if res.Lease == nil {
		return "", "", errors.New("the lease workflow answered neither a lease nor a conflict")
	}
	return res.Lease.LeaseID, "", nil
}

func (l aofLeases) RenewLease(ctx context.Context, leaseID, agent string, ttl time.Duration) error {
	_, err := l.c.Renew(ctx, lease.RenewRequest{LeaseID: leaseID, AgentID: agent, TTLSeconds: leaseSeconds(ttl)})
	return refusedLease(err)
}

func (l aofLeases) ReleaseLease(ctx context.Context, leaseID, agent string) error {
	_, err := l.c.Release(ctx, lease.ReleaseRequest{LeaseID: leaseID, AgentID: agent, Reason: lease.ReasonTaskEnded})
	var r *lease.RefusedError
	if errors.As(err, &r) && r.Type == lease.ErrNotHeld {
		return nil
	}
	return refusedLease(err)
}

func refusedLease(err error) error {
	var r *lease.RefusedError
	if errors.As(err, &r) {
		return &aofacts.LeaseRefused{Err: err}
	}
	return err
}
