package bench

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"time"
)

// Round is one alternation of the two sides: o.Tasks lifecycles on bare
// Temporal, then as many through ampflow.
type Round struct {
	BaselineLPS float64 `json:"baseline_lifecycles_per_s"`
	AmpflowLPS  float64 `json:"ampflow_lifecycles_per_s"`
	// Ratio is the round's ampflow over bare Temporal lifecycles per
	// second.
	Ratio float64 `json:"ratio"`
	// Acceptance of the round's submits, and the bare side's update
	// latency at p99 (the same round trip), in ms.
	AcceptP50MS   float64 `json:"accept_p50_ms"`
	AcceptP95MS   float64 `json:"accept_p95_ms"`
	AcceptP99MS   float64 `json:"accept_p99_ms"`
	BaselineP99MS float64 `json:"baseline_p99_ms"`
	// The CPU time each side used a lifecycle (this process, the
	// embedded server in it, and the git processes it ran), in ms, and
	// CPURatio, bare Temporal's over ampflow's: the round's ratio without
	// the time either side waited, which a burst of other load moves less.
	BaselineCPUMS float64 `json:"baseline_cpu_ms"`
	AmpflowCPUMS  float64 `json:"ampflow_cpu_ms"`
	CPURatio      float64 `json:"cpu_ratio"`

	baselineElapsed, ampflowElapsed time.Duration
}

// Spread is a figure over the rounds: their median, the least and the
// most, and the interquartile range.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Q1     float64 `json:"q1"`
	Q3     float64 `json:"q3"`
}

// round runs round i of n: the bare side, then ampflow's, each
// lifecycle's latencies added to all and all too.
func (b *bench) round(ctx context.Context, i, n int, baseAll, all *latencies) (Round, error) {
	o := b.o
	var r Round
	baseLat, lat := &latencies{}, &latencies{}
	var err error
	label := func(side string) string {
		if n == 1 {
			return side
		}
		return fmt.Sprintf("round %d/%d, %s", i+1, n, side)
	}
	// The agents' branches are made before the round: the stand-in
	// agents' own git work is not ampflow's, and stays out of its timing.
	ids := b.taskIDs(o.Tasks)
	branches := make([]string, len(ids))
	for j, id := range ids {
		if branches[j], err = b.repo.branch(id); err != nil {
			return r, err
		}
	}
	cpu0 := cpuWithChildren()
	r.baselineElapsed, err = b.phase(ctx, label("bare Temporal"), "lifecycles", b.names(fmt.Sprintf("bench-baseline-%d-", i+1), o.Tasks),
		func(ctx context.Context, _ int, id string) error { return b.baselineLifecycle(ctx, id, baseLat) })
	if err != nil {
		return r, fmt.Errorf("baseline: %w", err)
	}
	// The CPU profile is of the first round's ampflow side.
	if o.CPUProfile != nil && i == 0 {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return r, fmt.Errorf("starting the CPU profile: %w", err)
		}
	}
	cpu1 := cpuWithChildren()
	r.ampflowElapsed, err = b.phase(ctx, label("ampflow"), "lifecycles", ids,
		func(ctx context.Context, j int, id string) error { return b.lifecycle(ctx, id, branches[j], lat) })
	cpu2 := cpuWithChildren()
	if o.CPUProfile != nil && i == 0 {
		pprof.StopCPUProfile()
	}
	if err == nil {
		err = b.checkSSOT(ids)
	}
	if err != nil {
		return r, fmt.Errorf("ampflow: %w", err)
	}
	r.BaselineLPS = round(float64(o.Tasks)/r.baselineElapsed.Seconds(), 2)
	r.AmpflowLPS = round(float64(o.Tasks)/r.ampflowElapsed.Seconds(), 2)
	// Both sides ran o.Tasks lifecycles, so the ratio of rates is the
	// inverse ratio of times.
	r.Ratio = round(r.baselineElapsed.Seconds()/r.ampflowElapsed.Seconds(), 3)
	r.BaselineCPUMS, r.AmpflowCPUMS = cpuPerLifecycle(cpu0, cpu1, o.Tasks), cpuPerLifecycle(cpu1, cpu2, o.Tasks)
	if r.AmpflowCPUMS > 0 {
		r.CPURatio = round(r.BaselineCPUMS/r.AmpflowCPUMS, 3)
	}
	ds, bds := lat.all(), baseLat.all()
	r.AcceptP50MS, r.AcceptP95MS, r.AcceptP99MS = ms(Percentile(ds, 50)), ms(Percentile(ds, 95)), ms(Percentile(ds, 99))
	r.BaselineP99MS = ms(Percentile(bds, 99))
	all.addAll(ds)
	baseAll.addAll(bds)
	return r, nil
}

// spreadOf is the spread of the rounds' figure f.
func spreadOf(rounds []Round, f func(Round) float64) Spread {
	v := make([]float64, len(rounds))
	for i, r := range rounds {
		v[i] = f(r)
	}
	if len(v) == 0 {
		return Spread{}
	}
	slices.Sort(v)
	return Spread{Median: quantile(v, 0.5), Min: v[0], Max: v[len(v)-1], Q1: quantile(v, 0.25), Q3: quantile(v, 0.75)}
}

// quantile interpolates the q quantile of sorted v.
func quantile(v []float64, q float64) float64 {
	pos := q * float64(len(v)-1)
	lo := int(pos)
	if lo+1 >= len(v) {
		return round(v[lo], 3)
	}
	return round(v[lo]+(v[lo+1]-v[lo])*(pos-float64(lo)), 3)
}

// text says the spread in words, each figure in format.
func (s Spread) text(format string) string {
	f := func(v float64) string { return fmt.Sprintf(format, v) }
	return "min " + f(s.Min) + ", max " + f(s.Max) + ", IQR " + f(s.Q1) + "–" + f(s.Q3)
}
