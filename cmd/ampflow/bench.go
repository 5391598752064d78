package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ampflow/ampflow/cmd/ampflow/cli"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workers/bench"
)

// benchCommand measures ampflow against bare Temporal on this machine. It
// lives here, not in package cli, because it links the server.
func benchCommand(a *cli.App) *cobra.Command {
	var o bench.Options
	var lo bench.LeaseOptions
	var cpuProfile, heapProfile string
	var hooks int
	var ro bench.RunnerOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure ampflow on this machine: lifecycles/s against bare Temporal, submit latency, memory",
		Long: `Measure ampflow in one process on an embedded Temporal server in a
temporary directory (removed afterwards):

  - N full AMP lifecycles (dispatch, ACK, result, review request, ACK,
    approval) with the SSOT written and the git checks run on a throwaway
    repository, agents played in-process (each task's branch, their work,
    made before the round), C in flight;
  - N lifecycles of a bare Temporal workflow with the same client round
    trips (start, 4 updates, completion) and one no-op activity per update;
  - the CPU time of each side a lifecycle (this process and its git
    processes) and their ratio, beside the ratio of lifecycles a second;
  - the acceptance latency of every agent submit (p50, p95, p99);
  - the peak RSS, and the RSS with --open tasks left waiting (half for
    plan approval, half with a dispatch in the executor's inbox); each is
    read back through the HTTP API as its start answers (by id, its
    history's plan record, the task list): a read that misses it is
    counted (read_misses) and fails the run once the figures are printed;
  - with those tasks open, the latency (p50, p95, p99) of 300 requests
    each of GET /v1/inbox, GET /v1/decisions and GET /v1/tasks/{id}/history,
    read from the SSOT through the HTTP API.

With --hooks N it measures the tool policy's hook instead: N tool calls
on each CLI's path to the API served in this process, with a rule that
allows them (p50, p99): Claude Code's HTTP hook request, OpenCode's
plugin's request, the ampflow-hook binary Codex and Gemini CLI run (found
beside this executable or on PATH), and, for comparison, the command hook
` + "`ampflow hook codex`" + ` every CLI ran before.

With --runners N it measures runner deliveries instead: a worker whose
executor is a runner (agents.executor.mode: runner, runner: claude,
sandbox off, runner.slots --slots) of a stand-in CLI, this binary again,
that speaks Claude Code's stream-json with no model: an event every
--pace for --run-time, then a file written and a final result. N tasks
start at once, each to done (ampflow commits the file and submits the
result; an in-process reviewer approves). It prints dispatch to spawn
(from the Deliver activity's start to the CLI's pid file, written right
after its process started: p50, p99, max; --spread D starts the tasks
evenly over D, so that each dispatch meets the runs before it going
rather than a burst of dispatches), and the process's CPU and RSS
with every run going, against before the runs, per run; the CLIs' own
are not counted, the embedded Temporal server's and the SSOT's are.

It prints the commit measured (the binary's vcs.revision) and the load.

With --signals N it measures the action gate instead: N signals that need
no gate posted to POST /v1/signals over HTTP, C in flight (accept p50, p95,
p99), then N/4 that open a gate, approved through the decision engine
(gates resolved per second: answered and approved in the SSOT).

The SSOT is SQLite in the temporary directory unless --ssot-url names a
database (postgres://…): use an empty database of its own.

Progress goes to stderr once a second; -o json prints the figures only.
Like ampflow dev, it runs Go's garbage collector at GOGC=50 unless GOGC
is set.`,
		Example: `  ampflow bench
  ampflow bench --tasks 500 --concurrency 32 -o json
  ampflow bench --tasks 50 --open 0
  ampflow bench --tasks 20 --open 1000
  ampflow bench --open 1000 --ssot-url postgres://postgres@127.0.0.1:5432/bench
  ampflow bench --signals 2000 --concurrency 16
  ampflow bench --leases 1000 --lease-ttl 60s
  ampflow bench --hooks 500 -o json
  ampflow bench --runners 50 --slots 50 --pace 1s --run-time 20s -o json
  ampflow bench --runners 50 --spread 10s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if hooks > 0 {
				return runHookBench(cmd, a, hooks)
			}
			if ro.Runners > 0 {
				return runRunnerBench(cmd, a, ro)
			}
			return runBench(cmd, a, o, lo, cpuProfile, heapProfile)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Tasks, "tasks", bench.DefaultTasks, "run `N` lifecycles on each side in each round")
	f.IntVar(&o.Rounds, "rounds", bench.DefaultRounds, "alternate the two sides `R` times (bare Temporal, then ampflow); the ratio is the rounds' median")
	f.IntVar(&o.Concurrency, "concurrency", bench.DefaultConcurrency, "keep `C` lifecycles in flight")
	f.IntVar(&o.Signals, "signals", 0, "measure the action gate instead: post `N` signals with no gate and N/4 that open a gate, then approve those (accept p50/p95/p99, gates resolved per second)")
	f.IntVar(&o.Open, "open", bench.DefaultOpen, "hold `N` tasks open for the RSS reading and the read latencies (0 skips them)")
	f.IntVar(&o.WorkflowCache, "workflow-cache", config.DefaultWorkflowCache, "keep `N` workflows in memory between their steps (temporal.workflow_cache)")
	f.StringVar(&o.SSOTURL, "ssot-url", "", "keep the SSOT in the database at `URL` (default: SQLite in the temporary directory)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the ampflow phase to `FILE`")
	f.StringVar(&heapProfile, "memprofile", "", "write a heap profile taken with the open tasks in progress to `FILE`")
	f.IntVar(&lo.Leases, "leases", 0, "instead, take `N` leases at once, let them expire, and measure acquire latency and release lateness")
	f.DurationVar(&lo.TTL, "lease-ttl", bench.DefaultLeaseTTL, "the leases' time to live with --leases")
	f.IntVar(&hooks, "hooks", 0, "instead, decide `N` tool calls through each CLI's tool hook and measure one call (p50, p99)")
	f.IntVar(&ro.Runners, "runners", 0, "instead, run `N` runner deliveries of a stand-in agent CLI at once and measure dispatch to spawn (p50, p99) and the worker's CPU and RSS per run")
	f.IntVar(&ro.Slots, "slots", 0, "the worker's runner.slots with --runners (default: as many as --runners)")
	f.DurationVar(&ro.Pace, "pace", bench.DefaultRunnerPace, "the time between the stand-in CLI's events with --runners")
	f.DurationVar(&ro.Spread, "spread", 0, "with --runners, start the tasks evenly over this time instead of all at once")
	f.DurationVar(&ro.RunTime, "run-time", bench.DefaultRunnerRunTime, "how long each stand-in CLI runs before its result with --runners")
	_ = f.MarkHidden("cpuprofile")
	_ = f.MarkHidden("memprofile")
	return cmd
}

// runBench is ampflow bench; cpuProfile and heapProfile are the files of
// the hidden profile flags.
func runBench(cmd *cobra.Command, a *cli.App, o bench.Options, lo bench.LeaseOptions, cpuProfile, heapProfile string) error {
	if err := o.Validate(); err != nil {
		return cli.UsageError(err)
	}
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	tuneGC()
	o.Logger = a.Logger(cfg)
	if !a.JSON() {
		o.Progress = a.Stderr
	}
	for _, p := range []struct {
		path string
		w    *io.Writer
	}{{cpuProfile, &o.CPUProfile}, {heapProfile, &o.HeapProfile}} {
		if p.path == "" {
			continue
		}
		f, err := os.Create(p.path)
		if err != nil {
			return cli.Exit(cli.ExitFailed, fmt.Errorf("creating the profile: %w", err))
		}
		defer f.Close()
		*p.w = f
	}
	if lo.Leases > 0 {
		return runLeaseBench(cmd, a, cfg, lo)
	}
	r, err := bench.Run(cmd.Context(), o)
	if err != nil && !errors.Is(err, bench.ErrReadMisses) {
		return cli.Exit(cli.ExitFailed, fmt.Errorf("bench: %w", err))
	}
	// Read misses fail the run once its figures are printed.
	var perr error
	if a.JSON() {
		perr = a.PrintJSON(r)
	} else {
		perr = r.WriteText(a.Stdout)
	}
	if err != nil {
		return cli.Exit(cli.ExitFailed, fmt.Errorf("bench: %w", err))
	}
	return perr
}

// runLeaseBench is bench --leases.
func runLeaseBench(cmd *cobra.Command, a *cli.App, cfg config.Config, lo bench.LeaseOptions) error {
	lo.Logger = a.Logger(cfg)
	lo.SSOTURL, _ = cmd.Flags().GetString("ssot-url")
	lo.Concurrency, _ = cmd.Flags().GetInt("concurrency")
	if !a.JSON() {
		lo.Progress = a.Stderr
	}
	r, err := bench.RunLeases(cmd.Context(), lo)
	if err != nil {
		return cli.Exit(cli.ExitFailed, fmt.Errorf("bench --leases: %w", err))
	}
	if a.JSON() {
		return a.PrintJSON(r)
	}
	return r.WriteText(a.Stdout)
}

// runRunnerBench is bench --runners: the stand-in CLI is this binary.
func runRunnerBench(cmd *cobra.Command, a *cli.App, o bench.RunnerOptions) error {
	self, err := os.Executable()
	if err != nil {
		return cli.Exit(cli.ExitFailed, fmt.Errorf("bench --runners: finding the ampflow executable: %w", err))
	}
	o.StandIn = []string{self, bench.StandInCommand}
	if err := o.Validate(); err != nil {
		return cli.UsageError(err)
	}
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	tuneGC()
	o.Logger = a.Logger(cfg)
	if !a.JSON() {
		o.Progress = a.Stderr
	}
	r, err := bench.RunRunners(cmd.Context(), o)
	if err != nil {
		return cli.Exit(cli.ExitFailed, fmt.Errorf("bench --runners: %w", err))
	}
	if a.JSON() {
		return a.PrintJSON(r)
	}
	return r.WriteText(a.Stdout)
}

// runHookBench is bench --hooks.
func runHookBench(cmd *cobra.Command, a *cli.App, calls int) error {
	self, err := os.Executable()
	if err != nil {
		return cli.Exit(cli.ExitFailed, fmt.Errorf("bench --hooks: finding the ampflow executable: %w", err))
	}
	o := bench.HookOptions{Calls: calls, Ampflow: self}
	if p := filepath.Join(filepath.Dir(self), "ampflow-hook"); isExecutable(p) {
		o.HookBinary = p
	} else if p, err := exec.LookPath("ampflow-hook"); err == nil {
		o.HookBinary = p
	} else {
		fmt.Fprintln(a.Stderr, "bench --hooks: no ampflow-hook beside ampflow or on PATH: Codex's and Gemini CLI's path is not measured (go build ./cmd/ampflow-hook)")
	}
	r, err := bench.RunHooks(cmd.Context(), o)
	if err != nil {
		return cli.Exit(cli.ExitFailed, fmt.Errorf("bench --hooks: %w", err))
	}
	if a.JSON() {
		return a.PrintJSON(r)
	}
	return r.WriteText(a.Stdout)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
