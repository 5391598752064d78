package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	leaseacts "github.com/ampflow/ampflow/activities/lease"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/lease"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workers"
	leasewf "github.com/ampflow/ampflow/workflows/lease"
)

// Defaults of the lease benchmark.
const (
	DefaultLeaseTTL         = 60 * time.Second
	DefaultLeaseConcurrency = 16
)

// LeaseOptions configure RunLeases.
type LeaseOptions struct {
	// Leases is how many leases are taken and held at once; at least 1.
	Leases int
	// TTL is each lease's time to live; it must outlast taking them all.
	TTL time.Duration
	// Concurrency is how many acquires are in flight at once.
	Concurrency int
	Progress    io.Writer
	Logger      *slog.Logger
	// SSOTURL is as in Options.
	SSOTURL string
}

// LeaseResult is what RunLeases measured.
type LeaseResult struct {
	Leases      int    `json:"leases"`
	Concurrency int    `json:"concurrency"`
	TTLSeconds  int    `json:"ttl_seconds"`
	SSOT        string `json:"ssot"`
	// AcquireElapsed is the time to take them all; Acquire* the latency
	// of one acquire (as the API takes it: one transaction in the store).
	AcquireElapsed time.Duration `json:"acquire_elapsed_ns"`
	AcquireP50     time.Duration `json:"acquire_p50_ns"`
	AcquireP99     time.Duration `json:"acquire_p99_ns"`
	// Lateness is released_at - expires_at of each auto-release: the
	// sweeper's time when it ended the lease, against the lease's expiry.
	LatenessP50 time.Duration `json:"lateness_p50_ns"`
	LatenessP99 time.Duration `json:"lateness_p99_ns"`
	LatenessMax time.Duration `json:"lateness_max_ns"`
	// Late counts auto-releases more than a second after expiry.
	Late int `json:"late_over_1s"`
	// Machine is the commit measured and the machine's load.
	Machine Machine `json:"machine"`
}

// WriteText prints r for people.
func (r LeaseResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "leases: %d held at once (ttl %ds, %d acquires in flight, SSOT %s)\n"+
		"acquire: %s for all; p50 %s, p99 %s\n"+
		"auto-release after expiry: p50 %s, p99 %s, max %s; %d more than 1s late\n"+
		"measured: %s\n",
		r.Leases, r.TTLSeconds, r.Concurrency, r.SSOT, r.AcquireElapsed.Round(time.Millisecond),
		r.AcquireP50.Round(time.Microsecond), r.AcquireP99.Round(time.Microsecond),
		r.LatenessP50.Round(time.Microsecond), r.LatenessP99.Round(time.Microsecond), r.LatenessMax.Round(time.Microsecond), r.Late, r.Machine)
	return err
}

// RunLeases starts a dev server and a worker in a temporary directory,
// takes o.Leases leases on distinct keys, lets them all expire unrenewed
// and reads from the SSOT how late each was released.
func RunLeases(ctx context.Context, o LeaseOptions) (LeaseResult, error) {
	if o.Leases < 1 {
		return LeaseResult{}, fmt.Errorf("invalid --leases %d: must be at least 1", o.Leases)
	}
	if o.TTL <= 0 {
		o.TTL = DefaultLeaseTTL
	}
	if o.Concurrency < 1 {
		o.Concurrency = DefaultLeaseConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := newMachine(ctx)
	tmp, err := os.MkdirTemp("", "ampflow-bench-leases-")
	if err != nil {
		return LeaseResult{}, fmt.Errorf("creating the benchmark directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	c, stop, err := startTemporal(ctx, tmp, o.Logger)
	if err != nil {
		return LeaseResult{}, err
	}
	defer stop()
	cfg := config.Config{DataDir: tmp}
	cfg.SSOT.URL = o.SSOTURL
	cfg.CI.Provider = config.ProviderNone
	cfg.Temporal.TaskQueue = ampflowQueue
	parts, err := workers.Build(workers.Options{Config: cfg, Temporal: c, Logger: o.Logger,
		DecisionKeyFile: filepath.Join(tmp, workers.DecisionKeyFile)})
	if err != nil {
		return LeaseResult{}, err
	}
	defer parts.Close()
	w := workers.NewWorker(c, ampflowQueue, parts.Activities, nil)
	if err := w.Start(); err != nil {
		return LeaseResult{}, fmt.Errorf("starting the benchmark worker: %w", err)
	}
	defer w.Stop()
	// As the API takes agents' leases: in the store, the sweeper woken
	// for their expiry.
	lc := &leaseacts.Direct{Workflows: &leasewf.Client{Temporal: c, TaskQueue: ampflowQueue, Wait: 2 * time.Minute},
		Store: parts.Store, Expiry: parts.Expiries}
	r := LeaseResult{Leases: o.Leases, Concurrency: o.Concurrency, TTLSeconds: int(o.TTL.Seconds()), SSOT: parts.Store.Engine(), Machine: m}

	keys := make([]string, o.Leases)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:%05d", i)
	}
	lat := &latencies{}
	var last time.Time
	b := &bench{o: Options{Progress: o.Progress}}
	count, stop := b.progress("acquired", "leases", o.Leases)
	start := time.Now()
	err = pool(ctx, keys, o.Concurrency, count, func(ctx context.Context, _ int, key string) error {
		t0 := time.Now()
		res, err := lc.Acquire(ctx, key, lease.AcquireRequest{AgentID: "bench", TTLSeconds: r.TTLSeconds})
		if err != nil {
			return err
		}
		if res.Lease == nil {
			return fmt.Errorf("%s: held by %s", key, res.Conflict.Holder)
		}
		lat.add(time.Since(t0))
		return nil
	})
	stop()
	if err != nil {
		return r, fmt.Errorf("acquiring: %w", err)
	}
	r.AcquireElapsed = time.Since(start)
	last = start.Add(r.AcquireElapsed)
	if r.AcquireElapsed >= o.TTL {
		return r, fmt.Errorf("taking %d leases took %s, longer than their ttl %s: raise --lease-ttl", o.Leases, r.AcquireElapsed, o.TTL)
	}
	r.AcquireP50, r.AcquireP99 = Percentile(lat.all(), 50), Percentile(lat.all(), 99)

	// Every lease expires by last + TTL; wait for the store to show them all
	// ended, up to a minute more.
	deadline := last.Add(o.TTL + time.Minute)
	var lateness []time.Duration
	for {
		lateness, err = expiredLateness(ctx, parts.Store)
		if err != nil {
			return r, err
		}
		if len(lateness) == o.Leases {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d of %d leases auto-released a minute after the last expiry", len(lateness), o.Leases)
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "auto-released %d/%d leases\n", len(lateness), o.Leases)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	r.LatenessP50, r.LatenessP99 = Percentile(lateness, 50), Percentile(lateness, 99)
	for _, d := range lateness {
		r.LatenessMax = max(r.LatenessMax, d)
		if d > time.Second {
			r.Late++
		}
	}
	r.Machine.done()
	return r, nil
}

func expiredLateness(ctx context.Context, store *ssot.DB) ([]time.Duration, error) {
	var out []time.Duration
	cursor := ""
	for {
		rows, next, err := store.Leases(ctx, ssot.LeaseFilter{State: lease.StateExpired}, ssot.Page{Limit: ssot.MaxLimit, Cursor: cursor})
		if err != nil {
			return nil, errors.Join(errors.New("reading the expired leases"), err)
		}
		for _, l := range rows {
			out = append(out, l.ReleasedAt.Sub(l.ExpiresAt))
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
}
