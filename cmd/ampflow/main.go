// Command ampflow is the ampflow command line; see package cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/cmd/ampflow/cli"
	"github.com/ampflow/ampflow/workers"
	"github.com/ampflow/ampflow/workers/bench"
)

func main() {
	// A sandboxed run's first process (docs/sandbox.md): it bridges the
	// run's loopback to the worker, then runs the agent's CLI.
	if len(os.Args) > 1 && os.Args[1] == workers.BridgeCommand {
		os.Exit(runner.BridgeMain(os.Args[2:]))
	}
	// The stand-in agent CLI of ampflow bench --runners.
	if len(os.Args) > 1 && os.Args[1] == bench.StandInCommand {
		os.Exit(bench.StandIn(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.Options{
		Args:      os.Args[1:],
		Stdin:     os.Stdin,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		LookupEnv: os.LookupEnv,
		Extra:     []func(*cli.App) *cobra.Command{devCommand, temporalCommand, workerCommand, demoCommand, benchCommand},
	})
	stop()
	os.Exit(code)
}
