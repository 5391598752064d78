// Package bench measures ampflow on one machine: full AMP lifecycles
// against the same number of client round trips on a bare Temporal
// workflow, the latency of agents' submits, and memory with many tasks
// open. Server, worker, agents and client all run in this process, on an
// embedded dev server in a temporary directory; `ampflow bench` runs it.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workers"
	"github.com/ampflow/ampflow/workers/devserver"
	"github.com/ampflow/ampflow/workflows"
)

// Defaults of the command's flags.
const (
	DefaultTasks       = 200
	DefaultConcurrency = 16
	DefaultOpen        = 1000
	DefaultRounds      = 5
)

// Options configure Run.
type Options struct {
	// Tasks is how many lifecycles each side runs in a round; at least 1.
	Tasks int
	// Rounds is how many times the two sides alternate (bare Temporal,
	// then ampflow, after one warm-up): a burst of load on the machine
	// moves one round's ratio, not the median of them. 0 is one round.
	Rounds int
	// Concurrency is how many lifecycles are in flight at once; at least 1.
	Concurrency int
	// Open is how many tasks are held open for the memory reading; zero
	// skips it.
	Open int
	// WorkflowCache is the process's workflow cache (as
	// temporal.workflow_cache); zero is config.DefaultWorkflowCache.
	WorkflowCache int
	// Progress, when set, receives a line a second during long phases.
	Progress io.Writer
	// CPUProfile, when set, receives a CPU profile of the ampflow phase.
	CPUProfile io.Writer
	// HeapProfile, when set, receives a heap profile taken with the open
	// tasks in progress.
	HeapProfile io.Writer
	// Logger receives the server's and the SDK's warnings; nil discards.
	Logger *slog.Logger
	// SSOTURL is the SSOT's database (as ssot.url); empty is a SQLite
	// file in the benchmark's temporary directory.
	SSOTURL string
	// Signals, when more than zero, measures the action gate instead of
	// lifecycles: Signals signals, a quarter as many gates.
	Signals int
}

// Validate refuses options Run cannot work with.
func (o Options) Validate() error {
	var errs []error
	if o.Tasks < 1 {
		errs = append(errs, fmt.Errorf("invalid --tasks %d: must be at least 1", o.Tasks))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("invalid --concurrency %d: must be at least 1", o.Concurrency))
	}
	if o.Rounds < 0 {
		errs = append(errs, fmt.Errorf("invalid --rounds %d: must not be negative", o.Rounds))
	}
	if o.Signals < 0 {
		errs = append(errs, fmt.Errorf("invalid --signals %d: must not be negative", o.Signals))
	}
	if o.Open < 0 {
		errs = append(errs, fmt.Errorf("invalid --open %d: must not be negative", o.Open))
	}
	if o.WorkflowCache < 0 || o.WorkflowCache > config.MaxWorkflowCache {
		errs = append(errs, fmt.Errorf("invalid --workflow-cache %d: must be 1 to %d (0 is %d)", o.WorkflowCache, config.MaxWorkflowCache, config.DefaultWorkflowCache))
	}
	return errors.Join(errs...)
}

// warmup lifecycles run on each side before the clock starts, so that
// neither side pays for first connections and caches.
const warmup = 2

// ampflowQueue is the task queue of the benchmark's ampflow worker.
const ampflowQueue = "ampflow-bench"

// bench is one run: the server's client, the ampflow parts, the agents'
// inboxes and the repository.
type bench struct {
	o        Options
	temporal client.Client
	tasks    *workflows.Client
	store    *ssot.DB
	inboxes  *inboxes
	repo     repo
	ids      int
	// policy is every task's policy, the defaults': built once, so that
	// decoding the default configuration is not timed with each lifecycle.
	policy task.Policy
	// api, during the open phase, reads each started task back.
	api *api
	// retries counts the runners benchmark's submits sent again
	// (agent.retries).
	retries atomic.Int64
}

// Run starts a dev server in a new temporary directory, measures, stops
// everything and removes the directory.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := newMachine(ctx)
	tmp, err := os.MkdirTemp("", "ampflow-bench-")
	if err != nil {
		return Result{}, fmt.Errorf("creating the benchmark directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	// Before the server, whose system workers make the workflow cache.
	workers.SetWorkflowCache(cmp.Or(o.WorkflowCache, config.DefaultWorkflowCache))
	c, stop, err := startTemporal(ctx, tmp, o.Logger)
	if err != nil {
		return Result{}, err
	}
	defer stop()
	b := &bench{o: o, temporal: c, inboxes: &inboxes{}, policy: workflows.NewPolicy(config.Default())}
	if b.repo, err = makeRepo(ctx, filepath.Join(tmp, "repo")); err != nil {
		return Result{}, err
	}
	cfg := config.Config{DataDir: tmp}
	cfg.SSOT.URL = o.SSOTURL
	cfg.CI.Provider = config.ProviderNone
	cfg.Temporal.TaskQueue = ampflowQueue
	parts, err := workers.Build(workers.Options{Config: cfg, Temporal: c, Logger: o.Logger,
		DecisionKeyFile: filepath.Join(tmp, workers.DecisionKeyFile)})
	if err != nil {
		return Result{}, err
	}
	defer parts.Close()
	parts.Activities.Delivery = b.inboxes
	// The benchmark's tasks run by the default policy; nothing is decided.
	policy := workflows.NewPolicy(config.Default())
	policy.Admins = []string{benchAdmin} // who approves the gates of --signals
	// The one policy the worker and the client share: the client writes
	// a started task's plan record with it before the workflow does.
	*parts.Activities.Policy = policy
	b.tasks, b.store = parts.Tasks, parts.Store
	// A loaded two-core machine can take longer than the default 15s to
	// answer; a slow answer is a figure, not a failure.
	b.tasks.Wait = 2 * time.Minute
	w := workers.NewWorker(c, ampflowQueue, parts.Activities, parts.Gate)
	bw := newBaselineWorker(c)
	for _, x := range []interface{ Start() error }{w, bw} {
		if err := x.Start(); err != nil {
			return Result{}, fmt.Errorf("starting a benchmark worker: %w", err)
		}
	}
	defer w.Stop()
	defer bw.Stop()
	var r Result
	if o.Signals > 0 {
		r, err = b.measureSignals(ctx, parts)
	} else {
		r, err = b.measure(ctx)
	}
	m.done()
	r.Machine = m
	return r, err
}

func (b *bench) nextTaskID() string {
	b.ids++
	return fmt.Sprintf("T-%04d-%03d", time.Now().Year(), b.ids)
}

func (b *bench) taskIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = b.nextTaskID()
	}
	return ids
}

func (b *bench) measure(ctx context.Context) (Result, error) {
	o := b.o
	r := Result{Tasks: o.Tasks, Concurrency: o.Concurrency, Open: o.Open, SSOT: b.store.Engine()}
	warm := func(ctx context.Context, i int, id string) error {
		if err := b.baselineLifecycle(ctx, fmt.Sprintf("bench-warmup-%d", i), nil); err != nil {
			return err
		}
		branch, err := b.repo.branch(id)
		if err != nil {
			return err
		}
		return b.lifecycle(ctx, id, branch, nil)
	}
	warmIDs := b.taskIDs(warmup)
	if err := pool(ctx, warmIDs, 1, nil, warm); err != nil {
		return r, fmt.Errorf("warming up: %w", err)
	}
	if err := b.checkSSOT(warmIDs); err != nil {
		return r, fmt.Errorf("warming up: %w", err)
	}

	rounds := max(o.Rounds, 1)
	baseLat, lat := &latencies{}, &latencies{}
	for i := range rounds {
		round, err := b.round(ctx, i, rounds, baseLat, lat)
		if err != nil {
			return r, err
		}
		r.Rounds = append(r.Rounds, round)
		r.BaselineElapsed += round.baselineElapsed
		r.AmpflowElapsed += round.ampflowElapsed
	}
	r.Baseline.LifecyclesPerS = round(float64(o.Tasks*rounds)/r.BaselineElapsed.Seconds(), 2)
	r.Ampflow.LifecyclesPerS = round(float64(o.Tasks*rounds)/r.AmpflowElapsed.Seconds(), 2)
	r.RatioSpread = spreadOf(r.Rounds, func(x Round) float64 { return x.Ratio })
	r.CPURatioSpread = spreadOf(r.Rounds, func(x Round) float64 { return x.CPURatio })
	r.BaselineCPUMS = spreadOf(r.Rounds, func(x Round) float64 { return x.BaselineCPUMS }).Median
	r.AmpflowCPUMS = spreadOf(r.Rounds, func(x Round) float64 { return x.AmpflowCPUMS }).Median
	r.AcceptP50Spread = spreadOf(r.Rounds, func(x Round) float64 { return x.AcceptP50MS })
	r.AcceptP95Spread = spreadOf(r.Rounds, func(x Round) float64 { return x.AcceptP95MS })
	r.AcceptP99Spread = spreadOf(r.Rounds, func(x Round) float64 { return x.AcceptP99MS })
	r.Ratio = r.RatioSpread.Median
	r.AcceptP50MS, r.AcceptP95MS, r.AcceptP99MS = r.AcceptP50Spread.Median, r.AcceptP95Spread.Median, r.AcceptP99Spread.Median
	ds := lat.all()
	r.Submits = len(ds)
	r.AcceptMax = Percentile(ds, 100)
	bds := baseLat.all()
	r.BaselineP50, r.BaselineP99 = Percentile(bds, 50), Percentile(bds, 99)

	if o.Open > 0 {
		if err := b.measureOpen(ctx, &r); err != nil {
			return r, err
		}
	}
	peak, err := procStatus("VmHWM")
	if err != nil {
		return r, err
	}
	// Linux moves VmHWM up only as memory is unmapped, so a reading taken
	// after the RSS fell, by madvise alone, can be below the open reading.
	if r.RSSOpenMB != nil {
		peak = max(peak, *r.RSSOpenMB)
	}
	r.PeakRSSMB = round(peak, 1)
	return r, nil
}

// startTemporal starts an embedded Temporal server in tmp and dials it;
// stop closes the client and stops the server.
func startTemporal(ctx context.Context, tmp string, log *slog.Logger) (client.Client, func(), error) {
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir: filepath.Join(tmp, "temporal"), SearchAttributes: workers.SearchAttributes(), Logger: log,
	})
	if err != nil {
		return nil, nil, err
	}
	stopServer := func() {
		if err := srv.Stop(); err != nil {
			log.Warn("stopping the dev server", "error", err)
		}
	}
	c, err := workers.Dial(ctx, config.Temporal{Address: srv.FrontendAddr(), Namespace: devserver.DefaultNamespace, APIKey: srv.APIKey()}, log, nil, 10*time.Second)
	if err != nil {
		stopServer()
		return nil, nil, err
	}
	return c, func() { c.Close(); stopServer() }, nil
}
