package workers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ampflow/ampflow/activities"
	leaseacts "github.com/ampflow/ampflow/activities/lease"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/integrations/dashboard"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/repomesh"
	"github.com/ampflow/ampflow/workflows"
	leasewf "github.com/ampflow/ampflow/workflows/lease"
)

// registerLeases registers the lease workflow and the lease sweeper and,
// when the worker has the SSOT, their activities, which write leases and
// their mesh events there.
func registerLeases(w worker.Worker, acts *activities.Activities) {
	w.RegisterWorkflowWithOptions(leasewf.Workflow, workflow.RegisterOptions{Name: lease.WorkflowType})
	w.RegisterWorkflowWithOptions(leasewf.Sweeper, workflow.RegisterOptions{Name: leasewf.SweeperWorkflowType})
	rec, _ := acts.Store.(*activities.TaskRecord)
	if rec == nil {
		return
	}
	if store, ok := rec.Store.(leaseacts.MeshLeases); ok {
		w.RegisterActivityWithOptions((&leaseacts.Leases{Store: store}).LeaseChanged,
			activity.RegisterOptions{Name: lease.ActivityChanged})
	}
	if store, ok := rec.Store.(leaseacts.Expiries); ok {
		w.RegisterActivityWithOptions((&leaseacts.Sweep{Store: store}).LeaseSweep,
			activity.RegisterOptions{Name: lease.ActivitySweep})
	}
}

// agentLeases is the way to agents' leases: held directly in the store
// when the worker has one, else through the lease workflows.
func agentLeases(parts *Parts) repomesh.Leases {
	c := &leasewf.Client{Temporal: parts.Tasks.Temporal, TaskQueue: parts.Tasks.TaskQueue, DecisionKey: parts.Tasks.DecisionKey}
	if parts.Store == nil {
		return c
	}
	return &leaseacts.Direct{Workflows: c, Store: parts.Store, Expiry: parts.Expiries}
}

// addMesh adds the lease and mesh routes to the API.
func addMesh(api *httpapi.Server, parts *Parts, log *slog.Logger) {
	var store repomesh.Mesh
	if parts.Store != nil {
		store = parts.Store
	}
	var (
		leases repomesh.Leases
		tasks  repomesh.Tasks
	)
	if parts.Tasks != nil {
		leases = agentLeases(parts)
		tasks = parts.Tasks
	}
	repomesh.Register(api, repomesh.Options{Leases: leases, Store: store, Tasks: tasks, Logger: log})
}

// dashboardLeases releases a lease from the dashboard's Leases page, as
// an admin: in the store, or through the lease's workflow when it holds
// the lease.
type dashboardLeases struct{ c repomesh.Leases }

func (d dashboardLeases) ReleaseLease(ctx context.Context, leaseID, by string) error {
	if _, err := d.c.Release(ctx, lease.ReleaseRequest{LeaseID: leaseID, AgentID: by, Admin: true, Reason: lease.ReasonAdmin}); err != nil {
		return fmt.Errorf("releasing lease %s: %w", leaseID, err)
	}
	return nil
}

// meshPanels fill the dashboard's Leases, Agents and Mesh pages from the
// store, and let admins release a lease.
func meshPanels(parts *Parts, panels map[string]dashboard.Panel) dashboard.LeaseReleaser {
	panels[dashboard.PanelLeases] = dashboard.LeasesPanel(parts.Store)
	panels[dashboard.PanelAgents] = dashboard.AgentsPanel(parts.Store, parts.Store, parts.Store, parts.Store, nil)
	panels[dashboard.PanelMesh] = dashboard.MeshPanel(parts.Store)
	return dashboardLeases{agentLeases(parts)}
}

// progressTasks is the API's way to the tasks, with each heartbeat that
// carries a note also said in the mesh as a task.progress event: one
// insert, after the heartbeat reached its task; and each ACK of a
// dispatch or review request by a named token recorded as the task's
// delivery to that agent (activities.DeliveredEvent). A failed insert is
// logged; the heartbeat or ACK stands.
type progressTasks struct {
	workflows.Tasks
	mesh activities.MeshEvents
	log  *slog.Logger
}

// withProgress wraps tasks when there is a store to write the events to.
func withProgress(tasks *workflows.Client, store *ssot.DB, log *slog.Logger) workflows.Tasks {
	if tasks == nil || store == nil {
		return tasks
	}
	return progressTasks{Tasks: tasks, mesh: store, log: log}
}

func (p progressTasks) Heartbeat(ctx context.Context, taskID string, in task.HeartbeatInput) error {
	if err := p.Tasks.Heartbeat(ctx, taskID, in); err != nil {
		return err
	}
	if in.Note == "" {
		return nil
	}
	ev := activities.ProgressEvent(taskID, in, time.Now())
	if err := p.mesh.AppendEvents(context.WithoutCancel(ctx), []ssot.MeshEvent{ev}); err != nil {
		p.log.Warn("writing a task.progress event", "task_id", taskID, "error", err)
	}
	return nil
}

func (p progressTasks) Ack(ctx context.Context, msgID string, as amp.Role) (task.SubmitResult, error) {
	res, err := p.Tasks.Ack(ctx, msgID, as)
	if err == nil {
		p.delivered(ctx, msgID, as)
	}
	return res, err
}

func (p progressTasks) Submit(ctx context.Context, raw []byte) (task.SubmitResult, error) {
	res, err := p.Tasks.Submit(ctx, raw)
	if err == nil {
		if rec, perr := amp.ParseRecord(raw); perr == nil && rec.Ack != nil {
			p.delivered(ctx, rec.Ack.AckOf, rec.Ack.From)
		}
	}
	return res, err
}

// delivered records that the API's caller, acting as role, took the
// message msgID when it is a task's dispatch or review request.
func (p progressTasks) delivered(ctx context.Context, msgID string, role amp.Role) {
	c, ok := httpapi.CallerFrom(ctx)
	if !ok || c.Open || c.Name == "" {
		return // no token: no agent to record
	}
	typ, taskID, ok := amp.ParseMsgID(msgID)
	if !ok || (typ != amp.TypeTaskDispatch && typ != amp.TypeReviewRequest) {
		return
	}
	ev := activities.DeliveredEvent(taskID, msgID, c.Name, role, time.Now())
	if err := p.mesh.AppendEvents(context.WithoutCancel(ctx), []ssot.MeshEvent{ev}); err != nil {
		p.log.Warn("recording a task's delivery", "task_id", taskID, "agent", c.Name, "error", err)
	}
}
