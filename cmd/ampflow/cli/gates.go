package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/integrations/runshift"
	"github.com/ampflow/ampflow/workflows/gate"
)

// gatesCommand is `ampflow gates`: the action gate's gates, read through
// the HTTP API.
func (a *App) gatesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "gates",
		Short:   "List and show the action gate's gates (agents' signals and contracts)",
		GroupID: groupAdmin,
		Long: "Every signal an agent posted (POST /v1/signals) is a gate: approved at once when\n" +
			"no gate fired, else pending until an admin decides (ampflow pending, ampflow\n" +
			"decide, Slack, Telegram). Decide a gate like any decision.",
	}
	cmd.AddCommand(a.gatesListCommand(), a.gatesShowCommand(), a.gatesBudgetsCommand())
	return cmd
}

func (a *App) gatesListCommand() *cobra.Command {
	var (
		agent, project, status, runID string
		page                          pageFlags
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List gates, newest first",
		Long: "List shows gates newest first: id, status, agent, project, run, cost and the\n" +
			"proposed action. --status keeps pending, approved or rejected. -o json prints\n" +
			"an array of gates as GET /v1/gates/{gate_id} shows them, without callback attempts.\n" + pageHelp,
		Example: "  ampflow gates list --status pending\n  ampflow gates list --agent resume-tailor -o json",
		Args:    exactArgs(0, "none"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch status {
			case "", "pending", "approved", "rejected":
			default:
				return UsageError(fmt.Errorf("--status %q: must be pending, approved or rejected", status))
			}
			if err := page.check(); err != nil {
				return err
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			list, next, err := readPages(cmd.Context(), page, func(ctx context.Context, p pageQuery) ([]runshift.View, string, error) {
				q := p.values()
				for k, v := range map[string]string{"agent": agent, "project": project, "status": status, "run_id": runID} {
					if v != "" {
						q.Set(k, v)
					}
				}
				var out runshift.List
				err := c.do(ctx, http.MethodGet, "/v1/gates?"+q.Encode(), nil, nil, &out)
				return out.Gates, out.NextCursor, err
			})
			if err != nil {
				return refused(err)
			}
			if done, err := a.printPage(cmd, args, list, len(list), next, "no gates"); done {
				return err
			}
			t := newTable(a.Stdout, "GATE", "STATUS", "AGENT", "PROJECT", "RUN", "COST", "RECEIVED", "ACTION")
			for _, g := range list {
				st := string(g.Status)
				if !g.Gated {
					st += " (no gate)"
				}
				t.row(g.GateID, st, g.AgentID, dash(g.ProjectID), dash(g.RunID), "$"+strconv.FormatFloat(g.CostUSD, 'f', 4, 64),
					g.ReceivedAt.UTC().Format("2006-01-02 15:04:05"), clip(g.ProposedAction, 50))
			}
			if err := t.flush(); err != nil {
				return err
			}
			return a.printMore(cmd, args, next)
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only gates of this agent")
	cmd.Flags().StringVar(&project, "project", "", "only gates of this project")
	cmd.Flags().StringVar(&status, "status", "", "only gates with this status: pending, approved or rejected")
	cmd.Flags().StringVar(&runID, "run-id", "", "only the gate of this run")
	page.add(cmd, "gates")
	return cmd
}

func (a *App) gatesShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "show GATE_ID",
		Short:   "Show a gate, with its artifacts, the agent's latest signals and its callback attempts",
		Example: "  ampflow gates show gate_0123456789abcdef0123456789\n  ampflow gates show gate_0123456789abcdef0123456789 -o json",
		Args:    exactArgs(1, "GATE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			var g runshift.View
			if err := c.do(cmd.Context(), http.MethodGet, "/v1/gates/"+url.PathEscape(args[0]), nil, nil, &g); err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(g)
			}
			_, err = fmt.Fprint(a.Stdout, gateText(g))
			return err
		},
	}
}

// gateText is the text ampflow gates show prints of a gate.
func gateText(g runshift.View) string {
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-16s %s\n", k, v)
		}
	}
	line("gate", g.GateID)
	line("kind", string(g.Kind))
	st := string(g.Status)
	if !g.Gated {
		st += " (no gate fired)"
	}
	line("status", st)
	line("agent", g.AgentID)
	line("project", g.ProjectID)
	line("run", g.RunID)
	line("task", g.TaskID)
	line("summary", g.Summary)
	line("proposed action", g.ProposedAction)
	if g.Contract != nil {
		line("contract", g.Contract.ID+" "+g.Contract.Primitive+" ("+g.Contract.Level+", "+g.Contract.MinimumHandling+")")
	}
	cost := fmt.Sprintf("$%.6f counted; reported $%.6f, computed $%.6f; %d in / %d out tokens",
		g.CostUSD, g.Cost.ReportedUSD, g.Cost.ComputedUSD, g.Cost.InputTokens, g.Cost.OutputTokens)
	if g.Cost.Mismatch {
		cost += " (reported differs by more than 10%)"
	}
	line("cost", cost)
	line("model", g.Cost.Model)
	for _, r := range g.Reasons {
		line("reason", r)
	}
	line("received", g.ReceivedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	if g.ResolvedAt != nil {
		line("resolved", g.ResolvedAt.UTC().Format("2006-01-02 15:04:05 UTC")+" by "+g.ResolvedBy)
	}
	for _, f := range gate.ArtifactFacts(g.Artifacts) {
		line("artifact", f)
	}
	for _, h := range g.History {
		line("agent history", fmt.Sprintf("%s %s %s $%.4f %s", h.ReceivedAt.UTC().Format("2006-01-02 15:04:05"),
			dash(h.RunID), h.Status, h.CostUSD, clip(h.ProposedAction, 50)))
	}
	line("callback", g.Callback)
	for _, at := range g.Attempts {
		s := fmt.Sprintf("#%d %s", at.Attempt, at.At.UTC().Format("2006-01-02 15:04:05"))
		if at.StatusCode != 0 {
			s += fmt.Sprintf(" HTTP %d", at.StatusCode)
		}
		if at.Error != "" {
			s += " " + at.Error
		}
		line("attempt", s)
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
