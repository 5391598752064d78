package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Throughput is how fast one side of the comparison completed lifecycles.
type Throughput struct {
	LifecyclesPerS float64 `json:"lifecycles_per_s"`
}

// Result holds the figures of one benchmark run; encoded as JSON it is
// what `ampflow bench -o json` prints.
type Result struct {
	Ampflow  Throughput `json:"ampflow"`
	Baseline Throughput `json:"baseline"`
	// Ratio is Ampflow over Baseline lifecycles per second: the median
	// of the rounds' ratios (RatioSpread).
	Ratio float64 `json:"ratio"`
	// Rounds are the alternations of the two sides, each with its own
	// ratio and acceptance; the spreads are over them.
	Rounds      []Round `json:"rounds"`
	RatioSpread Spread  `json:"ratio_spread"`
	// CPURatioSpread is the rounds' CPU ratios (Round.CPURatio), and the
	// CPU figures each side's median CPU time a lifecycle, in ms.
	CPURatioSpread  Spread  `json:"cpu_ratio_spread"`
	BaselineCPUMS   float64 `json:"baseline_cpu_ms"`
	AmpflowCPUMS    float64 `json:"ampflow_cpu_ms"`
	AcceptP50Spread Spread  `json:"accept_p50_spread"`
	AcceptP95Spread Spread  `json:"accept_p95_spread"`
	AcceptP99Spread Spread  `json:"accept_p99_spread"`
	// Acceptance latency of agents' submits (send to accepted), in ms:
	// the median of the rounds' figures.
	AcceptP50MS float64 `json:"accept_p50_ms"`
	AcceptP95MS float64 `json:"accept_p95_ms"`
	AcceptP99MS float64 `json:"accept_p99_ms"`
	// PeakRSSMB is the process's VmHWM at the end of the run, in MiB.
	PeakRSSMB float64 `json:"peak_rss_mb"`
	// RSSOpenMB is VmRSS, in MiB, with Open tasks waiting for their
	// results; nil when Open is zero.
	RSSOpenMB *float64 `json:"rss_open_mb"`
	// Open is how many tasks were held open (Options.Open).
	Open        int `json:"open"`
	Tasks       int `json:"tasks"`
	Concurrency int `json:"concurrency"`
	// Reads are the API's read latencies with Open tasks open; nil when
	// Open is zero.
	Reads *Reads `json:"reads,omitempty"`
	// ReadMisses counts the reads that did not find a task of the open
	// phase right after its start answered (by id, its history's plan
	// record, the list); nil when Open is zero. More than zero fails the
	// run (ErrReadMisses).
	ReadMisses *int `json:"read_misses,omitempty"`
	// SSOT is the store's engine, sqlite or postgres.
	SSOT string `json:"ssot"`
	// Signals are the action gate's figures, with --signals (then the
	// lifecycle figures are not measured).
	Signals *SignalFigures `json:"signals,omitempty"`
	// Machine is the commit measured and the machine's load.
	Machine Machine `json:"machine"`

	// What the text table shows besides the figures above.
	AmpflowElapsed   time.Duration `json:"-"`
	BaselineElapsed  time.Duration `json:"-"`
	Submits          int           `json:"-"`
	AcceptMax        time.Duration `json:"-"`
	OpenStartElapsed time.Duration `json:"-"`
	// The baseline's update latencies, for comparison with the submits'.
	BaselineP50 time.Duration `json:"-"`
	BaselineP99 time.Duration `json:"-"`
	// Where the open tasks' memory is: Go heap and stacks in use, in MiB,
	// and goroutines (server, worker and workflow coroutines together).
	OpenHeapMB     float64 `json:"open_heap_mb,omitempty"`
	OpenStackMB    float64 `json:"open_stack_mb,omitempty"`
	OpenGoroutines int     `json:"open_goroutines,omitempty"`
}

// WriteText prints r as a table.
func (r Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if s := r.Signals; s != nil {
		for _, row := range [][2]string{
			{"signals", fmt.Sprintf("%d with no gate, %d in flight, %.1f/s (%s, SSOT %s)", s.Signals, r.Concurrency, s.SignalsPerS, s.SignalsElapsed.Round(time.Millisecond), r.SSOT)},
			{"accept p50", fmt.Sprintf("%.2f ms", s.AcceptP50MS)},
			{"accept p95", fmt.Sprintf("%.2f ms", s.AcceptP95MS)},
			{"accept p99", fmt.Sprintf("%.2f ms", s.AcceptP99MS)},
			{"gated signals", fmt.Sprintf("%d, accept p50 %.2f ms, p99 %.2f ms (record + gate workflow started)", s.Gates, s.GatedAcceptP50MS, s.GatedAcceptP99MS)},
			{"gates resolved", fmt.Sprintf("%.1f/s (%d approved in %s, %d at once)", s.GatesResolvedPerS, s.Gates, s.ResolveElapsed.Round(time.Millisecond), r.Concurrency)},
			{"peak RSS", fmt.Sprintf("%.0f MiB", r.PeakRSSMB)},
			{"measured", r.Machine.String()},
		} {
			fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
		}
		return tw.Flush()
	}
	rows := [][2]string{
		{"tasks", fmt.Sprintf("%d lifecycles a side in each of %d rounds, %d in flight", r.Tasks, max(len(r.Rounds), 1), r.Concurrency)},
		{"ampflow", fmt.Sprintf("%.2f lifecycles/s (%s)", r.Ampflow.LifecyclesPerS, r.AmpflowElapsed.Round(time.Millisecond))},
		{"bare Temporal", fmt.Sprintf("%.2f lifecycles/s (%s)", r.Baseline.LifecyclesPerS, r.BaselineElapsed.Round(time.Millisecond))},
		{"ratio", fmt.Sprintf("%.3f (ampflow / bare Temporal, median of the rounds; %s)", r.Ratio, r.RatioSpread.text("%.3f"))},
		{"CPU a lifecycle", fmt.Sprintf("ampflow %.1f ms, bare Temporal %.1f ms (medians; this process and its git processes)", r.AmpflowCPUMS, r.BaselineCPUMS)},
		{"CPU ratio", fmt.Sprintf("%.3f (bare Temporal's CPU over ampflow's, median of the rounds; %s)", r.CPURatioSpread.Median, r.CPURatioSpread.text("%.3f"))},
		{"acceptance p50", fmt.Sprintf("%.1f ms (%s)", r.AcceptP50MS, r.AcceptP50Spread.text("%.1f"))},
		{"acceptance p95", fmt.Sprintf("%.1f ms (%s)", r.AcceptP95MS, r.AcceptP95Spread.text("%.1f"))},
		{"acceptance p99", fmt.Sprintf("%.1f ms (%s; max %.1f ms, %d submits)", r.AcceptP99MS, r.AcceptP99Spread.text("%.1f"), ms(r.AcceptMax), r.Submits)},
		{"bare updates", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (the baseline's updates, same round trip)", ms(r.BaselineP50), ms(r.BaselineP99))},
		{"peak RSS", fmt.Sprintf("%.0f MiB", r.PeakRSSMB)},
	}
	if r.RSSOpenMB != nil {
		rows = append(rows, [2]string{fmt.Sprintf("RSS, %d open", r.Open),
			fmt.Sprintf("%.0f MiB (%d tasks started and left waiting in %s)", *r.RSSOpenMB, r.Open, r.OpenStartElapsed.Round(time.Millisecond))},
			[2]string{"", fmt.Sprintf("Go heap in use %.0f MiB, stacks %.0f MiB, %d goroutines", r.OpenHeapMB, r.OpenStackMB, r.OpenGoroutines)})
	}
	if r.ReadMisses != nil {
		rows = append(rows, [2]string{"read back", fmt.Sprintf("%d reads missed (each open task read at once by id, its history's plan record and the list)", *r.ReadMisses)})
	}
	if rd := r.Reads; rd != nil {
		for _, x := range []struct {
			name string
			l    ReadLatency
		}{{"GET /v1/inbox", rd.Inbox}, {"GET /v1/decisions", rd.Decisions}, {"GET …/history", rd.History}} {
			rows = append(rows, [2]string{x.name, fmt.Sprintf("p50 %.2f ms, p95 %.2f ms, p99 %.2f ms (%d requests, %d open, %s)",
				x.l.P50MS, x.l.P95MS, x.l.P99MS, rd.Samples, r.Open, r.SSOT)})
		}
	}
	rows = append(rows, [2]string{"measured", r.Machine.String()})
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row[0], row[1])
	}
	return tw.Flush()
}
