package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampflow/ampflow/amp/task"
)

// pool runs fn for every id with c in flight, stopping at the first
// error, which it returns. done, when set, is told of each success.
func pool(ctx context.Context, ids []string, c int, done func(), fn func(ctx context.Context, i int, id string) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(c, len(ids)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				if err := fn(ctx, i, ids[i]); err != nil {
					cancel(err)
					return
				}
				if done != nil {
					done()
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

// progress returns a counter for pool that prints "what n/total unit"
// to Options.Progress once a second, and the function that stops it.
func (b *bench) progress(what, unit string, total int) (count func(), stop func()) {
	if b.o.Progress == nil {
		return nil, func() {}
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fmt.Fprintf(b.o.Progress, "%s %d/%d %s\n", what, n.Load(), total, unit)
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() { n.Add(1) }, func() { once.Do(func() { close(done) }) }
}

// phase runs fn over ids with Options.Concurrency in flight, reporting
// progress, and returns how long it took.
func (b *bench) phase(ctx context.Context, what, unit string, ids []string, fn func(ctx context.Context, i int, id string) error) (time.Duration, error) {
	count, stop := b.progress(what, unit, len(ids))
	defer stop()
	began := time.Now()
	err := pool(ctx, ids, b.o.Concurrency, count, fn)
	return time.Since(began), err
}

func (b *bench) names(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return ids
}

// measureOpen starts Options.Open tasks left waiting (half for plan
// approval, half with a dispatch in the executor's inbox), each read back
// through the API as its start answers, reads the process's RSS and times
// the SSOT's reads, then cancels them all. A task not read back is an
// ErrReadMisses, returned once the rest is measured.
func (b *bench) measureOpen(ctx context.Context, r *Result) error {
	ids := b.taskIDs(b.o.Open)
	a, err := b.serveAPI()
	if err != nil {
		return err
	}
	defer a.stop()
	b.api = a
	r.OpenStartElapsed, err = b.phase(ctx, "open", "tasks waiting", ids, b.openAwaiting)
	b.api = nil
	if err != nil {
		return fmt.Errorf("opening %d tasks: %w", len(ids), err)
	}
	misses, missErr := a.result()
	r.ReadMisses = &misses
	rss, err := procStatus("VmRSS")
	if err != nil {
		return err
	}
	rss = round(rss, 1)
	r.RSSOpenMB = &rss
	if b.o.HeapProfile != nil {
		if err := pprof.WriteHeapProfile(b.o.HeapProfile); err != nil {
			return fmt.Errorf("writing the heap profile: %w", err)
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	r.OpenHeapMB, r.OpenStackMB, r.OpenGoroutines = round(float64(m.HeapInuse)/(1<<20), 1), round(float64(m.StackInuse)/(1<<20), 1), runtime.NumGoroutine()
	reads, err := b.measureReads(ctx, a, ids)
	if err != nil {
		return fmt.Errorf("timing the SSOT's reads: %w", err)
	}
	r.Reads = &reads
	_, err = b.phase(ctx, "cancel", "tasks", ids, func(ctx context.Context, _ int, id string) error {
		_, err := b.tasks.Cancel(ctx, id, task.CancelInput{By: "ampflow bench", Reason: "benchmark over"})
		return err
	})
	if err != nil {
		return fmt.Errorf("cancelling the open tasks: %w", err)
	}
	return missErr
}
