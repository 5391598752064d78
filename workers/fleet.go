package workers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/integrations/dashboard"
	"github.com/ampflow/ampflow/integrations/fleet"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// runsAgents reports whether this worker runs agent CLIs (a role in
// runner mode), and so is a host of the fleet.
func runsAgents(cfg config.Config) bool {
	return cfg.Agents.Executor.Mode == config.AgentModeRunner || cfg.Agents.Reviewer.Mode == config.AgentModeRunner
}

// addFleet serves GET /v1/fleet from the SSOT.
func addFleet(api *httpapi.Server, parts *Parts, log *slog.Logger) {
	if parts.Store == nil {
		return
	}
	fleet.Register(api, fleet.Options{Store: parts.Store, Logger: log})
}

// fleetHost writes this worker's slots, runs and queue to the SSOT when a
// run takes, queues for or gives back a slot, and every
// fleet.PublishEvery (a run's step and cost, and the host's liveness), so
// that every worker's API shows the whole fleet.
type fleetHost struct {
	store   *ssot.DB
	slots   *delivery.Slots
	host    string
	started time.Time
	log     *slog.Logger
}

// fleetSettle is how long the host waits after a change of its slots
// before it writes them.
const fleetSettle = 100 * time.Millisecond

func (f fleetHost) run(ctx context.Context) error {
	tick := time.NewTicker(fleet.PublishEvery)
	defer tick.Stop()
	for {
		if err := f.publish(ctx); err != nil && ctx.Err() == nil {
			f.log.Warn("writing this host to the fleet", "host", f.host, "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-f.slots.Changed():
			// A burst of changes (a run ending and the next taking its
			// slot) is written once.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(fleetSettle):
			}
		}
	}
}

func (f fleetHost) publish(ctx context.Context) error {
	runs, err := json.Marshal(f.slots.View())
	if err != nil {
		return fmt.Errorf("encoding the runs: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return f.store.SaveHost(wctx, ssot.Host{Host: f.host, Slots: f.slots.Size(), Runs: runs, StartedAt: f.started, SeenAt: time.Now()})
}

// runnerRoles are the roles this worker runs an agent CLI for, as the
// dashboard's Agents page lists them.
func runnerRoles(cfg config.Config) []dashboard.RunnerRole {
	var out []dashboard.RunnerRole
	for _, r := range []struct {
		role string
		ag   config.Agent
	}{{"executor", cfg.Agents.Executor}, {"reviewer", cfg.Agents.Reviewer}} {
		if r.ag.Mode == config.AgentModeRunner {
			role := dashboard.RunnerRole{Role: r.role, Runner: r.ag.Runner, Model: r.ag.Model}
			for _, a := range r.ag.Accounts {
				role.Accounts = append(role.Accounts, a.Name)
			}
			out = append(out, role)
		}
	}
	return out
}

// dashboardFleet gives the dashboard the fleet as GET /v1/fleet shows
// it: the runs of the live hosts for the runner agents, and every host
// listed for the Hosts section.
type dashboardFleet struct{ store fleet.Records }

func (d dashboardFleet) Runs(ctx context.Context) ([]dashboard.RunnerRun, error) {
	hosts, err := d.hosts(ctx, fleet.AliveWithin)
	if err != nil {
		return nil, err
	}
	var out []dashboard.RunnerRun
	for _, h := range hosts {
		if h.Alive {
			out = append(append(out, h.Running...), h.Queue...)
		}
	}
	return out, nil
}

func (d dashboardFleet) Hosts(ctx context.Context) ([]dashboard.FleetHost, error) {
	return d.hosts(ctx, fleet.ListedFor)
}

// hosts reads the hosts seen within the last window.
func (d dashboardFleet) hosts(ctx context.Context, window time.Duration) ([]dashboard.FleetHost, error) {
	now := time.Now()
	rows, err := d.store.Hosts(ctx, now.Add(-window))
	if err != nil {
		return nil, err
	}
	var out []dashboard.FleetHost
	for _, h := range fleet.View(rows, now).Hosts {
		out = append(out, dashboard.FleetHost{Host: h.Host, Alive: h.Alive, Slots: h.Slots, InUse: h.InUse,
			Running: runnerRuns(h.Host, h.Running), Queue: runnerRuns(h.Host, h.Queue), SeenAt: h.SeenAt})
	}
	return out, nil
}

func runnerRuns(host string, runs []fleet.Run) []dashboard.RunnerRun {
	var out []dashboard.RunnerRun
	for _, r := range runs {
		out = append(out, dashboard.RunnerRun{Host: host, TaskID: r.TaskID, Role: string(r.Role), Runner: r.Runner, Account: r.Account, Step: r.Step,
			Queued: r.Queued, Started: r.Started, CostUSD: r.CostUSD, Priority: r.Priority})
	}
	return out
}

// accountSpend gives the dashboard what this worker's runs spent today
// on each runner account.
type accountSpend struct{ accounts *delivery.Accounts }

func (a accountSpend) AccountSpendToday() []dashboard.AccountSpend {
	var out []dashboard.AccountSpend
	for _, s := range a.accounts.SpentToday() {
		out = append(out, dashboard.AccountSpend{Role: string(s.Role), Account: s.Account, USD: s.USD})
	}
	return out
}

// workerAccounts is this worker's runner accounts, nil when it runs no
// runner.
func workerAccounts(parts *Parts) dashboard.AccountSpender {
	if d, ok := parts.Activities.Delivery.(*delivery.Delivery); ok && d.Accounts != nil {
		return accountSpend{d.Accounts}
	}
	return nil
}

// The worker's metrics count runners' spend by account.
var _ delivery.AccountCounter = (*httpapi.Metrics)(nil)
