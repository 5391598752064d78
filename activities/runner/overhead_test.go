package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRunOverhead measures what Run itself adds to a run, with a
// stand-in CLI (/bin/sh printing a recorded Claude stream at once, so no
// model or CLI start-up is in the figures): first_event_ms, from the call
// to the first event; exit_ms, from the final result event to Run's
// return (the exit, the group's reaping, the pid file removed).
func BenchmarkRunOverhead(b *testing.B) {
	stream, err := os.ReadFile(filepath.Join("testdata", "claude_commit.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "stream.jsonl")
	if err := os.WriteFile(file, stream, 0o600); err != nil {
		b.Fatal(err)
	}
	s := Spec{Runner: Claude, Command: []string{"/bin/sh", "-c", `exec cat "$0"`, file}, Dir: dir, Prompt: "go",
		Env: []string{"PATH=/usr/bin:/bin"}, PIDDir: filepath.Join(dir, "pids")}
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
