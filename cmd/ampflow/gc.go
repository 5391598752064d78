package main

import (
	"os"
	"runtime/debug"
)

// embeddedGCPercent is the garbage collector's target for the commands that
// run a Temporal server in the process (dev, bench), unless GOGC is set.
// Server, worker and workflow caches keep many small objects alive; at
// Go's default of 100 the heap grows to twice that before a collection.
// At 50 a dev process with 1,000 open tasks holds about 70 MiB less
// (BENCHMARKS.md) for some CPU.
const embeddedGCPercent = 50

// tuneGC applies embeddedGCPercent when the user has not chosen.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(embeddedGCPercent)
	}
}
