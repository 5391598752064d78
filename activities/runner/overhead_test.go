package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkRunOverhead measures what Run itself adds to a run, with a
// stand-in CLI (/bin/sh printing a recorded Claude stream at once, so no
// model or CLI start-up is in the figures): first_event_ms, from the call
// to the first event; exit_ms, from the final result event to Run's
// return (the exit, the group's reaping, the pid file removed).
func BenchmarkRunOverhead(b *testing.B) {
	s := standIn(b)
	var first, exit time.Duration
	for b.Loop() {
		start := time.Now()
		var firstAt, resultAt time.Time
		o, err := Run(context.Background(), s, func(ev Event) {
			if firstAt.IsZero() {
				firstAt = time.Now()
			}
			if ev.Kind == EventResult {
				resultAt = time.Now()
			}
		})
		done := time.Now()
		if err != nil || !o.Result || resultAt.IsZero() {
			b.Fatalf("run: %v, %+v", err, o)
		}
		first += firstAt.Sub(start)
		exit += done.Sub(resultAt)
	}
	n := float64(b.N)
	b.ReportMetric(float64(first.Microseconds())/n/1000, "first_event_ms")
	b.ReportMetric(float64(exit.Microseconds())/n/1000, "exit_ms")
}

// BenchmarkSandboxOverhead measures what the sandbox adds to a run's
// start: from the call to the first event, p50 and p99, of the stand-in
// CLI of BenchmarkRunOverhead run alternately without a sandbox and in
// one (bubblewrap, data_dir hidden), so the machine's load falls on both
// alike.
func BenchmarkSandboxOverhead(b *testing.B) {
	if err := CheckSandbox(context.Background(), ""); err != nil {
		b.Skip(err)
	}
	s := standIn(b)
	boxed := s
	boxed.Sandbox = &Sandbox{Hide: []string{b.TempDir()}}
	var plain, sandboxed []time.Duration
	first := func(s Spec) time.Duration {
		start := time.Now()
		var at time.Time
		o, err := Run(context.Background(), s, func(Event) {
			if at.IsZero() {
				at = time.Now()
			}
		})
		if err != nil || !o.Result {
			b.Fatalf("run: %v, %+v", err, o)
		}
		return at.Sub(start)
	}
	for b.Loop() {
		plain = append(plain, first(s))
		sandboxed = append(sandboxed, first(boxed))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(plain, 50)), "plain_p50_ms")
	b.ReportMetric(ms(percentile(plain, 99)), "plain_p99_ms")
	b.ReportMetric(ms(percentile(sandboxed, 50)), "sandbox_p50_ms")
	b.ReportMetric(ms(percentile(sandboxed, 99)), "sandbox_p99_ms")
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

// standIn is the Spec of the stand-in CLI: /bin/sh printing a recorded
// Claude stream at once.
func standIn(b *testing.B) Spec {
	stream, err := os.ReadFile(filepath.Join("testdata", "claude_commit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "stream.jsonl")
	if err := os.WriteFile(file, stream, 0o600); err != nil {
		b.Fatal(err)
	}
	return Spec{Runner: Claude, Command: []string{"/bin/sh", "-c", `exec cat "$0"`, file}, Dir: dir, Prompt: "go",
		Env: []string{"PATH=/usr/bin:/bin"}, PIDDir: filepath.Join(dir, "pids")}
}
