package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// RunnerResult holds the figures of the runners benchmark; encoded as
// JSON it is what `ampflow bench --runners N -o json` prints.
type RunnerResult struct {
	// Runners is how many runs started at once, Slots the worker's
	// runner.slots, Runner the stream format the stand-in CLI speaks.
	Runners int    `json:"runners"`
	Slots   int    `json:"slots"`
	Runner  string `json:"runner"`
	// Sandbox is whether the runs were confined (agents.<role>.sandbox);
	// the figures leave the sandbox's own cost out when it is false.
	Sandbox bool `json:"sandbox"`
	// PaceMS is the time between the stand-in's events, RunTimeS how long
	// each run lasts before its result.
	PaceMS   float64 `json:"pace_ms"`
	RunTimeS float64 `json:"run_time_s"`
	// SpreadS is the time the tasks' starts were spread over; 0: all at
	// once.
	SpreadS float64 `json:"spread_s"`
	// Runs is how many runs were measured (Runners, all done).
	Runs int `json:"runs"`
	// Dispatch to spawn, in ms: from the start of the Deliver activity of
	// a task's dispatch to the worker's pid file of the run's CLI, written
	// right after its process started.
	SpawnP50MS float64 `json:"dispatch_to_spawn_p50_ms"`
	SpawnP99MS float64 `json:"dispatch_to_spawn_p99_ms"`
	SpawnMaxMS float64 `json:"dispatch_to_spawn_max_ms"`
	// StandInStartP50MS is from the pid file to the stand-in's main: the
	// CLI's own start, not in the figures above.
	StandInStartP50MS float64 `json:"standin_start_p50_ms"`
	// The process's CPU, in % of one core, with no run going (IdleCPUPct)
	// and with every run going (BusyCPUPct, over WindowS seconds), and
	// the difference per run. The CLIs' CPU is not in it; the embedded
	// Temporal server's and the SSOT's is.
	IdleCPUPct   float64 `json:"idle_cpu_pct"`
	BusyCPUPct   float64 `json:"busy_cpu_pct"`
	CPUPerRunPct float64 `json:"cpu_per_run_pct"`
	WindowS      float64 `json:"window_s"`
	// The process's RSS in MiB before the runs and, as a mean over the
	// window, with every run going, and the difference per run.
	RSSBeforeMB float64 `json:"rss_before_mb"`
	RSSBusyMB   float64 `json:"rss_busy_mb"`
	RSSPerRunMB float64 `json:"rss_per_run_mb"`
	// ElapsedS is from the first task's start to the last one's end.
	ElapsedS float64 `json:"elapsed_s"`
	// SubmitRetries counts the in-process reviewer's submits sent again
	// because the server failed the workflow task that held them while
	// the executor's delivery completed (the update was not applied).
	SubmitRetries int `json:"submit_retries"`
	// SSOT is the store's engine.
	SSOT string `json:"ssot"`
	// Machine is the commit measured and the machine's load.
	Machine Machine `json:"machine"`

	Elapsed time.Duration `json:"-"`
}

// WriteText prints r as a table.
func (r RunnerResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	starts := "all started at once"
	if r.SpreadS > 0 {
		starts = fmt.Sprintf("started evenly over %.0f s", r.SpreadS)
	}
	sandbox := "off (its own cost is not in these figures)"
	if r.Sandbox {
		sandbox = "on"
	}
	for _, row := range [][2]string{
		{"runs", fmt.Sprintf("%d, %s, runner.slots %d, stand-in %s CLI: an event every %.0f ms for %.0f s (SSOT %s)",
			r.Runners, starts, r.Slots, r.Runner, r.PaceMS, r.RunTimeS, r.SSOT)},
		{"sandbox", sandbox},
		{"dispatch to spawn", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d runs; the stand-in's own start, p50 %.1f ms, not in it)",
			r.SpawnP50MS, r.SpawnP99MS, r.SpawnMaxMS, r.Runs, r.StandInStartP50MS)},
		{"worker CPU", fmt.Sprintf("%.1f%% of a core with the runs going (%.1f s), %.1f%% idle: %.2f%% per run (CLIs not counted)",
			r.BusyCPUPct, r.WindowS, r.IdleCPUPct, r.CPUPerRunPct)},
		{"worker RSS", fmt.Sprintf("%.1f MiB with the runs going, %.1f MiB before: %.2f MiB per run (CLIs not counted)",
			r.RSSBusyMB, r.RSSBeforeMB, r.RSSPerRunMB)},
		{"elapsed", fmt.Sprintf("%.1f s, start of the first task to the end of the last (%d reviewer submits sent again)", r.ElapsedS, r.SubmitRetries)},
		{"measured", r.Machine.String()},
	} {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	return tw.Flush()
}
