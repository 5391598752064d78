package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // reversed: Percentile must sort
	}
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"Empty", nil, 50, 0},
		{"One", ms(7), 99, 7 * time.Millisecond},
		{"MedianOdd", ms(5, 1, 3), 50, 3 * time.Millisecond},
		{"MedianEven", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"P95Of100", ms(hundred...), 95, 95 * time.Millisecond},
		{"P99Of100", ms(hundred...), 99, 99 * time.Millisecond},
		{"P99OfTenIsMax", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"P100IsMax", ms(3, 9, 1), 100, 9 * time.Millisecond},
		{"TinyPIsMin", ms(3, 9, 1), 0.1, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.ds)
			if got := Percentile(tt.ds, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.ds, tt.p, got, tt.want)
			}
			if !slices.Equal(before, tt.ds) {
				t.Errorf("Percentile reordered its input: %v, was %v", tt.ds, before)
			}
		})
	}
}

func TestResultJSONKeys(t *testing.T) {
	rss := 321.5
	r := Result{
		Ampflow: Throughput{LifecyclesPerS: 12.5}, Baseline: Throughput{LifecyclesPerS: 20},
		Ratio: 0.625, AcceptP50MS: 4, AcceptP95MS: 9, AcceptP99MS: 15,
		PeakRSSMB: 400, RSSOpenMB: &rss, Tasks: 200, Concurrency: 16,
		Open: 1000, AmpflowElapsed: time.Second, Submits: 800, SSOT: "sqlite",
		Reads: &Reads{Inbox: ReadLatency{P50MS: 1, P95MS: 2, P99MS: 3}, Samples: ReadSamples},
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	want := []string{"accept_p50_ms", "accept_p50_spread", "accept_p95_ms", "accept_p95_spread", "accept_p99_ms", "accept_p99_spread",
		"ampflow", "ampflow_cpu_ms", "baseline", "baseline_cpu_ms", "concurrency", "cpu_ratio_spread", "machine", "open", "peak_rss_mb", "ratio", "ratio_spread", "reads", "rounds",
		"rss_open_mb", "ssot", "tasks"}
	var got []string
	for k := range top {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v (in %s)", got, want, b)
	}
	for _, side := range []string{"ampflow", "baseline"} {
		var inner map[string]float64
		if err := json.Unmarshal(top[side], &inner); err != nil {
			t.Fatal(err)
		}
		if len(inner) != 1 || inner["lifecycles_per_s"] == 0 {
			t.Errorf("%s = %s, want only a non-zero lifecycles_per_s", side, top[side])
		}
	}
	if string(top["rss_open_mb"]) != "321.5" || string(top["ratio"]) != "0.625" {
		t.Errorf("rss_open_mb %s, ratio %s; want 321.5 and 0.625", top["rss_open_mb"], top["ratio"])
	}
	r.RSSOpenMB = nil
	b, _ = json.Marshal(r)
	if !strings.Contains(string(b), `"rss_open_mb":null`) {
		t.Errorf("without an open-task reading the key should be null: %s", b)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string // parts of the error; none means valid
	}{
		{"Defaults", Options{Tasks: DefaultTasks, Concurrency: DefaultConcurrency, Open: DefaultOpen}, nil},
		{"OneOfEach", Options{Tasks: 1, Concurrency: 1}, nil},
		{"NoTasks", Options{Tasks: 0, Concurrency: 1}, []string{"--tasks 0"}},
		{"NegativeConcurrency", Options{Tasks: 5, Concurrency: -2}, []string{"--concurrency -2"}},
		{"NegativeOpen", Options{Tasks: 5, Concurrency: 1, Open: -1}, []string{"--open -1"}},
		{"NegativeRounds", Options{Tasks: 5, Concurrency: 1, Rounds: -1}, []string{"--rounds -1"}},
		{"NegativeCache", Options{Tasks: 5, Concurrency: 1, WorkflowCache: -1}, []string{"--workflow-cache -1"}},
		{"Both", Options{}, []string{"--tasks 0", "--concurrency 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to name %q", err, w)
				}
			}
		})
	}
	if _, err := Run(context.Background(), Options{Tasks: 1}); err == nil {
		t.Error("Run with --concurrency 0 should refuse before starting anything")
	}
}

// TestSpread: the median and quartiles of the rounds, interpolated.
func TestSpread(t *testing.T) {
	var rounds []Round
	for _, v := range []float64{0.9, 0.5, 0.7, 0.6, 0.8} {
		rounds = append(rounds, Round{Ratio: v})
	}
	got := spreadOf(rounds, func(r Round) float64 { return r.Ratio })
	if want := (Spread{Median: 0.7, Min: 0.5, Max: 0.9, Q1: 0.6, Q3: 0.8}); got != want {
		t.Errorf("spread %+v, want %+v", got, want)
	}
	if got := spreadOf(rounds[:2], func(r Round) float64 { return r.Ratio }); got.Median != 0.7 || got.Q1 != 0.6 {
		t.Errorf("two rounds: %+v", got)
	}
}

func TestWriteText(t *testing.T) {
	rss := 300.0
	var buf bytes.Buffer
	r := Result{Ratio: 0.5, AcceptP99MS: 42.25, RSSOpenMB: &rss, Open: 1000, Tasks: 10, Concurrency: 2,
		Machine: Machine{Commit: "abc123", CPUs: 2, LoadBefore: []float64{1.5, 2, 2.25}}}
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ratio", "0.500", "acceptance p99", "42.2 ms", "RSS, 1000 open", "300 MiB",
		"commit abc123", "2 CPUs", "load 1.50 2.00 2.25 before, unknown after"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestRun is one small real run: a server, both sides, a few open tasks.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := Run(ctx, Options{Tasks: 3, Concurrency: 2, Open: 5, Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("Run left %s behind in the temporary directory", left[0].Name())
	}
	if r.Ampflow.LifecyclesPerS <= 0 || r.Baseline.LifecyclesPerS <= 0 || r.Ratio <= 0 {
		t.Errorf("throughputs %+v / %+v, ratio %v: want all positive", r.Ampflow, r.Baseline, r.Ratio)
	}
	if r.Submits != 3*3*submitsPerLifecycle {
		t.Errorf("%d submits timed, want %d", r.Submits, 3*3*submitsPerLifecycle)
	}
	// Three rounds alternated the sides; the ratio is their median.
	if len(r.Rounds) != 3 {
		t.Fatalf("%d rounds, want 3", len(r.Rounds))
	}
	sp := r.RatioSpread
	if !(sp.Min > 0 && sp.Min <= sp.Q1 && sp.Q1 <= sp.Median && sp.Median <= sp.Q3 && sp.Q3 <= sp.Max) || r.Ratio != sp.Median {
		t.Errorf("ratio %v, spread %+v: want the ordered spread's median", r.Ratio, sp)
	}
	for i, x := range r.Rounds {
		if x.Ratio <= 0 || x.AcceptP99MS <= 0 || x.BaselineP99MS <= 0 || x.BaselineCPUMS <= 0 || x.AmpflowCPUMS <= 0 ||
			x.CPURatio != round(x.BaselineCPUMS/x.AmpflowCPUMS, 3) {
			t.Errorf("round %d: %+v", i+1, x)
		}
	}
	if !(r.AcceptP50MS > 0 && r.AcceptP50MS <= r.AcceptP95MS && r.AcceptP95MS <= r.AcceptP99MS) {
		t.Errorf("latencies p50 %v, p95 %v, p99 %v: want positive and ordered", r.AcceptP50MS, r.AcceptP95MS, r.AcceptP99MS)
	}
	if r.RSSOpenMB == nil || *r.RSSOpenMB <= 0 || r.PeakRSSMB < *r.RSSOpenMB {
		t.Errorf("peak RSS %v, open RSS %v: want a positive open reading no higher than the peak", r.PeakRSSMB, r.RSSOpenMB)
	}
	if r.Tasks != 3 || r.Concurrency != 2 {
		t.Errorf("tasks %d, concurrency %d; want 3 and 2", r.Tasks, r.Concurrency)
	}
	if r.Reads == nil || r.SSOT != "sqlite" {
		t.Fatalf("reads %+v on %q; want read latencies on sqlite", r.Reads, r.SSOT)
	}
	for name, l := range map[string]ReadLatency{"inbox": r.Reads.Inbox, "decisions": r.Reads.Decisions, "history": r.Reads.History} {
		if !(l.P50MS > 0 && l.P50MS <= l.P95MS && l.P95MS <= l.P99MS) {
			t.Errorf("%s read latencies %+v: want positive and ordered", name, l)
		}
	}
}

// TestRunSignals runs the action gate's benchmark small: every signal is
// accepted, every gate resolved, and the figures are filled in.
func TestRunSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	r, err := Run(context.Background(), Options{Tasks: 1, Concurrency: 4, Signals: 40})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Signals
	if s == nil || s.Signals != 40 || s.Gates != 10 || s.AcceptP99MS <= 0 || s.GatesResolvedPerS <= 0 || s.SignalsPerS <= 0 {
		t.Fatalf("figures %+v", s)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "gates resolved") {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if err := (Options{Tasks: 1, Concurrency: 1, Signals: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "--signals -1") {
		t.Fatalf("negative signals: %v", err)
	}
}

func TestMachine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []float64
	}{
		{"0.52 1.10 2.00 3/412 12345\n", []float64{0.52, 1.1, 2}},
		{"7.5 6 5.25", []float64{7.5, 6, 5.25}},
		{"", nil},
		{"1.0 x 2.0 1/1 1", nil},
	} {
		if got := parseLoadAvg(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("parseLoadAvg(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	// go test stamps no vcs.revision: the commit is the HEAD of the
	// source's checkout, wherever the test runs.
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	t.Chdir(t.TempDir())
	m := newMachine(t.Context())
	if m.Commit != strings.TrimSpace(string(head)) {
		t.Errorf("commit %q, want HEAD %s", m.Commit, head)
	}
	if _, err := os.Stat("/proc/loadavg"); err == nil && len(m.LoadBefore) != 3 {
		t.Errorf("load before %v, want /proc/loadavg's three averages", m.LoadBefore)
	}
	m.done()
	b, err := json.Marshal(LeaseResult{Machine: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"machine":{"commit":"`, `"load_before":[`, `"load_after":[`, `"cpus":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("lease result JSON lacks %s: %s", key, b)
		}
	}
}

func TestCommitOf(t *testing.T) {
	ctx := t.Context()
	src := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", src, "-c", "user.name=b", "-c", "user.email=b@example.com"}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	git("add", "f")
	git("commit", "-q", "-m", "one")
	head := git("rev-parse", "HEAD")
	stamped := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	unstamped := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-buildvcs", Value: "false"}}}
	goRun := "/tmp/go-build1234/b001/exe/ampflow"
	for _, tt := range []struct {
		name  string
		bi    *debug.BuildInfo
		exe   string
		want  string
		dirty bool
	}{
		{"StampedBinary", stamped, "/usr/local/bin/ampflow", "abc123", true},
		{"StampedUnderGoRun", stamped, goRun, "abc123", true},
		{"UnstampedBinary", unstamped, "/usr/local/bin/ampflow", "unknown", false},
		{"GoRun", unstamped, goRun, head, false},
		{"GoTest", nil, "/tmp/go-build99/b123/bench.test", head, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, dirty := commitOf(ctx, tt.bi, tt.exe, src)
			if got != tt.want || dirty != tt.dirty {
				t.Errorf("commitOf = %q, dirty %v; want %q, dirty %v", got, dirty, tt.want, tt.dirty)
			}
		})
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, dirty := commitOf(ctx, unstamped, goRun, src); got != head || !dirty {
		t.Errorf("changed source: commitOf = %q, dirty %v; want %q, dirty", got, dirty, head)
	}
}

// TestWorkflowCache holds 40 tasks open under a workflow cache of 5 and
// of 1,000: the tasks the small cache does not keep have no goroutines
// left, the embedded server's own workers' cache being the same one.
func TestWorkflowCache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal server")
	}
	t.Setenv("TMPDIR", t.TempDir())
	goroutines := func(cache int) int {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		r, err := Run(ctx, Options{Tasks: 1, Concurrency: 1, Open: 40, WorkflowCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		return r.OpenGoroutines
	}
	small, large := goroutines(5), goroutines(1000)
	t.Logf("goroutines with 40 open tasks: %d with a cache of 5, %d with 1,000", small, large)
	// A task workflow kept has its main coroutine, its record and notice
	// loops and its handlers' goroutines: at least three.
	if small > large-35*3 {
		t.Errorf("%d goroutines with a cache of 5, %d with 1,000: the 35 tasks not kept still have theirs", small, large)
	}
}
