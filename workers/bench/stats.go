package bench

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100) of ds by the
// nearest-rank method: the smallest value with at least p% of the values
// at or below it. It returns 0 for no values; ds need not be sorted and is
// left as it was.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// latencies collects acceptance latencies from many goroutines.
type latencies struct {
	mu sync.Mutex
	ds []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ds = append(l.ds, d)
	l.mu.Unlock()
}

func (l *latencies) addAll(ds []time.Duration) {
	l.mu.Lock()
	l.ds = append(l.ds, ds...)
	l.mu.Unlock()
}

func (l *latencies) all() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ds)
}

// procStatus reads a "kB" field of /proc/self/status (VmRSS, VmHWM) in
// MiB.
func procStatus(field string) (float64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", field, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err != nil {
			return 0, fmt.Errorf("reading %s from /proc/self/status: %q: %w", field, rest, err)
		}
		return kb / 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", field, err)
	}
	return 0, fmt.Errorf("reading %s: not in /proc/self/status", field)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 {
	return round(float64(d)/float64(time.Millisecond), 3)
}

func round(v float64, places int) float64 {
	f := math.Pow(10, float64(places))
	return math.Round(v*f) / f
}
