package cli

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/integrations/fleet"
)

func (a *App) fleetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "fleet",
		Short: "Show the runner hosts: their slots, runs and queues",
		Long: "Every worker that runs agent CLIs (a role in runner mode) writes itself to the\n" +
			"SSOT every 5 s: its runner.host, its runner.slots, the runs holding a slot and\n" +
			"the runs waiting for one, in the order they will be served (higher task\n" +
			"priority first, then the oldest). A host silent for 30 s is shown as gone.",
		Example: "  ampflow fleet\n  ampflow fleet -o json",
		GroupID: groupAdmin,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var f fleet.Response
			if err := c.do(cmd.Context(), http.MethodGet, "/v1/fleet", nil, nil, &f); err != nil {
				return err
			}
			if a.JSON() {
				return a.PrintJSON(f)
			}
			return a.printFleet(f)
		},
	}
}

func (a *App) printFleet(f fleet.Response) error {
	if len(f.Hosts) == 0 {
		fmt.Fprintln(a.Stdout, "no runner hosts: no worker with a role in runner mode has written itself in the last hour")
		return nil
	}
	hosts := newTable(a.Stdout, "HOST", "STATE", "SLOTS", "RUNNING", "QUEUED", "SEEN")
	for _, h := range f.Hosts {
		state := "alive"
		if !h.Alive {
			state = "gone"
		}
		hosts.row(h.Host, state, fmt.Sprint(h.Slots), fmt.Sprint(h.InUse), fmt.Sprint(len(h.Queue)), h.SeenAt.Local().Format(time.TimeOnly))
	}
	if err := hosts.flush(); err != nil {
		return err
	}
	runs := newTable(a.Stdout, "HOST", "TASK", "ROLE", "RUNNER", "ACCOUNT", "STATE", "FOR", "COST", "STEP")
	n := 0
	for _, h := range f.Hosts {
		for _, r := range h.Running {
			runs.row(h.Host, r.TaskID, string(r.Role), r.Runner, orDash(r.Account), "running", seconds(r.For), fmt.Sprintf("$%.2f", r.CostUSD), oneLine(r.Step))
			n++
		}
		for i, r := range h.Queue {
			runs.row(h.Host, r.TaskID, string(r.Role), r.Runner, "-", fmt.Sprintf("queued #%d (priority %d)", i+1, r.Priority), seconds(r.For), "-", "")
			n++
		}
	}
	if n == 0 {
		return nil
	}
	fmt.Fprintln(a.Stdout)
	return runs.flush()
}

func seconds(s float64) string {
	return (time.Duration(s) * time.Second).String()
}
