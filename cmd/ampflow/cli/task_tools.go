package cli

import (
	"net/url"

	"github.com/spf13/cobra"
)

func (a *App) taskToolsCommand() *cobra.Command {
	var tool, kind, decision, agent string
	cmd := &cobra.Command{
		Use:   "tools TASK_ID",
		Short: "List the tool calls a task's agents made, and what became of each",
		Long: "Tools lists the task's tool calls from its chain (GET /v1/tasks/{id}/tool-calls):\n" +
			"the tool, its kind, the rule that matched, the decision (allow, deny, pending)\n" +
			"and who took it. -o json prints each call whole, with its bounded input and the\n" +
			"input's digest.",
		Example: "  ampflow task tools T-2026-045\n  ampflow task tools T-2026-045 --decision deny -o json",
		Args:    taskIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"tool": tool, "kind": kind, "decision": decision, "agent": agent} {
				if v != "" {
					q.Set(k, v)
				}
			}
			calls, err := c.TaskToolCalls(cmd.Context(), args[0], q)
			if err != nil {
				return refused(err)
			}
			if a.JSON() {
				return a.PrintJSON(calls)
			}
			t := newTable(a.Stdout, "AT", "ID", "TOOL", "KIND", "RULE", "DECISION", "BY", "INPUT")
			for _, tc := range calls {
				rule := tc.Rule
				if rule == "" {
					rule = "default"
				}
				t.row(stamp(tc.At), tc.ID, tc.Tool, tc.Kind, rule, tc.Decision, tc.By, clip(tc.Input, 60))
			}
			return t.flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&tool, "tool", "", "only calls of `TOOL` (the CLI's name for it)")
	f.StringVar(&kind, "kind", "", "only calls of `KIND`: shell, edit, read, fetch, mcp or other")
	f.StringVar(&decision, "decision", "", "only calls decided `D`: allow, deny or pending")
	f.StringVar(&agent, "agent", "", "only calls of the agent `NAME` (its token's name)")
	return cmd
}
