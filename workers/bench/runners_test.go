package bench

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the stand-in CLI of the runners
// benchmark, as the ampflow binary is for ampflow bench.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == StandInCommand {
		os.Exit(StandIn(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestRunRunners(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev server and runs agent CLIs")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := RunRunners(ctx, RunnerOptions{Runners: 2, Pace: 50 * time.Millisecond, RunTime: 2 * time.Second,
		StandIn: []string{self, StandInCommand}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Runs != 2 || r.Slots != 2 || r.Sandbox {
		t.Errorf("runs %d, slots %d, sandbox %v; want 2 runs in 2 slots unconfined", r.Runs, r.Slots, r.Sandbox)
	}
	if r.SpawnP50MS <= 0 || r.SpawnP50MS > r.SpawnP99MS || r.SpawnP99MS > r.SpawnMaxMS {
		t.Errorf("dispatch to spawn p50 %v, p99 %v, max %v ms: want 0 < p50 <= p99 <= max", r.SpawnP50MS, r.SpawnP99MS, r.SpawnMaxMS)
	}
	if r.WindowS <= 0 || r.BusyCPUPct <= 0 || r.RSSBeforeMB <= 0 || r.RSSBusyMB <= 0 {
		t.Errorf("window %v s, busy CPU %v%%, RSS before %v MiB, with the runs %v MiB: want all above zero", r.WindowS, r.BusyCPUPct, r.RSSBeforeMB, r.RSSBusyMB)
	}
	if r.ElapsedS < r.RunTimeS {
		t.Errorf("elapsed %v s, shorter than a run (%v s)", r.ElapsedS, r.RunTimeS)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"dispatch_to_spawn_p50_ms":`, `"dispatch_to_spawn_p99_ms":`, `"cpu_per_run_pct":`, `"rss_per_run_mb":`, `"machine":`, `"sandbox":false`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("-o json has no %s: %s", k, raw)
		}
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dispatch to spawn", "worker RSS", "off (its own cost"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the table has no %q:\n%s", want, text.String())
		}
	}
}

func TestParseCPUTime(t *testing.T) {
	stat := "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 3 4 20 0 12 0 100 1000 200"
	got, err := parseCPUTime(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Errorf("parseCPUTime = %v, want %v (utime 250 + stime 50 ticks; the children's 3 and 4 left out)", got, want)
	}
	if _, err := parseCPUTime("4242 (cmd) S 1"); err == nil {
		t.Error("parseCPUTime of a short line: no error")
	}
}

func TestRunnerOptionsValidate(t *testing.T) {
	ok := RunnerOptions{Runners: 1, Pace: 100 * time.Millisecond, RunTime: 10 * time.Second, StandIn: []string{"ampflow", StandInCommand}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v", ok, err)
	}
	for name, mod := range map[string]func(*RunnerOptions){
		"NoRunners":    func(o *RunnerOptions) { o.Runners = 0 },
		"TooManySlots": func(o *RunnerOptions) { o.Slots = 1000 },
		"NoPace":       func(o *RunnerOptions) { o.Pace = 0 },
		"ShortRun":     func(o *RunnerOptions) { o.RunTime = 300 * time.Millisecond },
		"NoStandIn":    func(o *RunnerOptions) { o.StandIn = nil },
		"LongSpread":   func(o *RunnerOptions) { o.Spread = o.RunTime },
	} {
		t.Run(name, func(t *testing.T) {
			o := ok
			mod(&o)
			if err := o.Validate(); err == nil {
				t.Errorf("Validate(%+v) = nil, want an error", o)
			}
		})
	}
}
