package bench

import (
	"syscall"
	"time"
)

// cpuWithChildren is the CPU time this process and its reaped children (the git
// processes of the checks) have used so far; zero where getrusage fails.
func cpuWithChildren() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) != nil {
			return 0
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

// cpuPerLifecycle is the CPU time a phase of n lifecycles used, each, in ms.
func cpuPerLifecycle(before, after time.Duration, n int) float64 {
	if n <= 0 || after <= before {
		return 0
	}
	return round(float64(after-before)/float64(n)/float64(time.Millisecond), 2)
}
