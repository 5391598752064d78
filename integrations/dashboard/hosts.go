package dashboard

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// PanelHosts fills the Hosts section of the Agents page: the runner hosts
// of the fleet, their slots, their runs and their queues.
const PanelHosts = "hosts"

// FleetHost is one runner host of the fleet, as GET /v1/fleet shows it.
type FleetHost struct {
	Host string
	// Alive is false once the host has stopped writing itself to the
	// fleet (fleet.AliveWithin).
	Alive        bool
	Slots, InUse int
	// Running are the host's runs; Queue its runs waiting for a slot, in
	// the order they will take one.
	Running, Queue []RunnerRun
	SeenAt         time.Time
}

// FleetHosts lists the hosts of the fleet, alive or gone, as
// GET /v1/fleet does.
type FleetHosts interface {
	Hosts(ctx context.Context) ([]FleetHost, error)
}

// HostsPanel lists each runner host of the fleet: alive or gone, its
// slots in use, each of its runs (its task, role, runner, account, step,
// for how long and its cost so far) and its queue in order (each run's
// task, role, priority and how long it has waited).
func HostsPanel(fleet FleetHosts, now func() time.Time) Panel {
	if now == nil {
		now = time.Now
	}
	return hostsPanel{fleet, now}
}

type hostsPanel struct {
	fleet FleetHosts
	now   func() time.Time
}

func (p hostsPanel) Table(ctx context.Context) (Table, error) {
	now := p.now()
	hosts, err := p.fleet.Hosts(ctx)
	if err != nil {
		return Table{}, fmt.Errorf("reading the fleet: %w", err)
	}
	t := Table{Columns: []string{"Host", "State", "Slots", "Running", "Queue", "Seen"}}
	for _, h := range hosts {
		state := "alive"
		if !h.Alive {
			state = "gone"
		}
		running := Cell{Text: "–"}
		for _, r := range h.Running {
			running.Lines = append(running.Lines, []Cell{{Text: r.TaskID, Href: "/tasks/" + r.TaskID},
				{Text: strings.Join([]string{r.Role, orDash(r.Runner), "account " + orDash(r.Account), orDash(r.Step),
					"for " + now.Sub(r.Started).Round(time.Second).String(), fmt.Sprintf("$%.4f", r.CostUSD)}, " · ")}})
		}
		queue := Cell{Text: "–"}
		for i, r := range h.Queue {
			queue.Lines = append(queue.Lines, []Cell{{Text: fmt.Sprintf("#%d", i+1)}, {Text: r.TaskID, Href: "/tasks/" + r.TaskID},
				{Text: strings.Join([]string{r.Role, fmt.Sprintf("priority %d", r.Priority),
					"waiting " + now.Sub(r.Queued).Round(time.Second).String()}, " · ")}})
		}
		t.Rows = append(t.Rows, []Cell{{Text: h.Host}, {Text: state}, {Text: fmt.Sprintf("%d of %d in use", h.InUse, h.Slots)},
			running, queue, {Time: h.SeenAt}})
	}
	return t, nil
}
