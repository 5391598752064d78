package workers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gateacts "github.com/ampflow/ampflow/activities/gate"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/httpapi"
	"github.com/ampflow/ampflow/integrations/runshift"
	"github.com/ampflow/ampflow/workflows/gate"
)

// gateActivities are the action gate's side effects on this worker.
func gateActivities(cfg config.Config, store *ssot.DB, log *slog.Logger, m *httpapi.Metrics) *gateacts.Gate {
	g := &gateacts.Gate{Store: store, Secret: cfg.Gate.WebhookSecret, Allowed: runshift.Allow(cfg.Gate.WebhookAllow), Log: log}
	if m != nil {
		g.Resolved = runshift.NewMetrics(m.Registry()).Resolved
	}
	return g
}

// LeaseGateRecover is the lease of the sweep that finishes signals a
// crash left half done (runshift.Intake.Recover).
const LeaseGateRecover = "gate.recover"

// addGate adds the action gate's routes to the API: signals from the
// agents of gate.agents, gates opened on this worker's task queue; and,
// on one worker at a time, the sweep that finishes half-done signals.
func addGate(api *httpapi.Server, rt *runtime, o Options, parts *Parts, log *slog.Logger) error {
	// Gates' decisions show in GET /v1/decisions whichever worker opened
	// them.
	api.Add(httpapi.Spec{DecisionKinds: gate.DecisionKinds()})
	if parts.Store == nil || parts.Tasks == nil || parts.Tasks.Temporal == nil {
		return nil
	}
	c, queue := parts.Tasks.Temporal, o.Config.Temporal.TaskQueue
	start := func(ctx context.Context, in gate.Input) (gate.Started, error) { return gate.Start(ctx, c, queue, in) }
	var reg prometheus.Registerer
	if o.Metrics != nil {
		reg = o.Metrics.Registry()
	}
	in, err := runshift.NewIntake(o.Config.Gate, o.Config.Pricing, parts.Store, start, os.LookupEnv, reg)
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	in.Logger = log
	in.TaskBudgets = &runshift.TaskBudgets{Tasks: parts.Tasks, Store: parts.Store}
	runshift.Register(api, in)
	rt.gateAgent = func(h string) (string, bool) {
		a, ok := in.Keys.Check(h)
		return a.ID, ok
	}
	every := min(o.Config.SSOT.SweepInterval, time.Minute)
	rt.loops = append(rt.loops, leased(parts.Lease, LeaseGateRecover, NewHolder(), log,
		func(ctx context.Context) error { return in.RecoverLoop(ctx, every) }))
	return nil
}
