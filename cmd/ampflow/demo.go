package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/cmd/ampflow/cli"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workers/demo"
)

// demoCommand plays a scripted executor and reviewer through one task
// against a running `ampflow dev`.
func demoCommand(a *cli.App) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch one task go round the whole loop, with a scripted executor and reviewer",
		Long: `Run one task end to end through the HTTP API (api.url) of a running 'ampflow dev':
a throwaway git repository in a temporary directory, a low-risk task with one
subtask, a scripted executor that ACKs, commits and reports, and a scripted
reviewer that rejects the first round with one critical issue and approves
the fix. Each step is narrated; -o json prints the steps as a JSON array.

The demo needs the default configuration: ci.provider none and pull-mode
agents. Where plan or final approval of low-risk tasks is not automatic
(AMPFLOW_POLICY_PLAN_APPROVAL_LOW=admin), the demo says so and waits for
the approval, on the dashboard or with 'ampflow decide'.`,
		Example: `  ampflow dev &
  ampflow demo
  ampflow demo -o json --timeout 1m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return cli.UsageError(fmt.Errorf("invalid --timeout %s: must be positive", task.FormatDuration(timeout)))
			}
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if cfg.CI.Provider != config.ProviderNone {
				return cli.Exit(cli.ExitFailed, fmt.Errorf(
					"the demo needs ci.provider none, the default; this configuration has %q, so the task would wait for CI", cfg.CI.Provider))
			}
			for i, mode := range []string{cfg.Agents.Executor.Mode, cfg.Agents.Reviewer.Mode} {
				role := []string{"executor", "reviewer"}[i]
				if mode != config.AgentModePull {
					fmt.Fprintf(a.Stderr, "ampflow: note: agents.%s.mode is %s here; the demo plays pull-mode agents, and a %s agent may answer first\n", role, mode, mode)
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			tasks, err := a.Tasks()
			if err != nil {
				return err
			}
			dashboard := ""
			if cfg.Dashboard.Enabled {
				dashboard = strings.TrimSuffix(cfg.API.URL, "/")
			}
			if dashboard != "" && !a.JSON() {
				fmt.Fprintf(a.Stdout, "watch it on the dashboard: %s/tasks\n", dashboard)
			}
			began := time.Now()
			sum, err := demo.Run(ctx, demo.Options{Tasks: tasks, Out: a.Stdout, JSON: a.JSON(), Poll: 200 * time.Millisecond, Dashboard: dashboard})
			var te *demo.TimeoutError
			if errors.As(err, &te) {
				return cli.Exit(cli.ExitFailed, fmt.Errorf("the demo did not finish within %s: %w", task.FormatDuration(timeout), err))
			}
			if err != nil {
				return cli.Exit(cli.ExitFailed, fmt.Errorf("demo: %w", err))
			}
			if a.JSON() {
				return nil
			}
			fmt.Fprintf(a.Stdout, "\nfinished in %s. Look further:\n", time.Since(began).Round(100*time.Millisecond))
			fmt.Fprintf(a.Stdout, "  ampflow task show %s\n", sum.TaskID)
			fmt.Fprintf(a.Stdout, "  ampflow task history %s\n", sum.TaskID)
			if dashboard != "" {
				fmt.Fprintf(a.Stdout, "  %s/tasks/%s\n", dashboard, sum.TaskID)
			}
			if cfg.Dev.UIPort > 0 {
				fmt.Fprintf(a.Stdout, "  http://127.0.0.1:%d/namespaces/%s/workflows/%s\n", cfg.Dev.UIPort, cfg.Temporal.Namespace, sum.TaskID)
			}
			fmt.Fprintf(a.Stdout, "  the repository: git -C %s log --oneline %s\n", sum.Repo, demo.FeatureBranch)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up after `D` (the whole run)")
	return cmd
}
