package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workers"
	"github.com/ampflow/ampflow/workflows"
)

// Defaults of the runners benchmark's flags.
const (
	DefaultRunnerPace    = time.Second
	DefaultRunnerRunTime = 20 * time.Second
)

// RunnerOptions configure RunRunners.
type RunnerOptions struct {
	// Runners is how many executor runs start at once; at least 1.
	Runners int
	// Slots is the worker's runner.slots; 0 is Runners.
	Slots int
	// Pace is the time between the stand-in CLI's events, RunTime how
	// long it runs before its result.
	Pace    time.Duration
	RunTime time.Duration
	// Spread spaces the tasks' starts evenly over this time; zero starts
	// them all at once.
	Spread time.Duration
	// StandIn is the command line that starts the stand-in CLI, before
	// its own arguments: the ampflow binary and StandInCommand.
	StandIn []string
	// Progress, when set, receives a line a second.
	Progress io.Writer
	// Logger receives the server's and the SDK's warnings; nil discards.
	Logger *slog.Logger
}

// Validate refuses options RunRunners cannot work with.
func (o RunnerOptions) Validate() error {
	var errs []error
	if o.Runners < 1 {
		errs = append(errs, fmt.Errorf("invalid --runners %d: must be at least 1", o.Runners))
	}
	if o.Slots < 0 || o.Slots > config.MaxSlots {
		errs = append(errs, fmt.Errorf("invalid --slots %d: must be 0 (as many as --runners) to %d", o.Slots, config.MaxSlots))
	}
	if o.Pace <= 0 {
		errs = append(errs, fmt.Errorf("invalid --pace %s: must be more than zero", o.Pace))
	}
	if o.RunTime < time.Second || o.RunTime < 4*o.Pace {
		errs = append(errs, fmt.Errorf("invalid --run-time %s: must be at least 1s and 4 times --pace", o.RunTime))
	}
	if o.Spread < 0 || o.Spread > 0 && o.RunTime < o.Spread+time.Second {
		errs = append(errs, fmt.Errorf("invalid --spread %s: must not be negative, and --run-time must be at least 1s longer", o.Spread))
	}
	if len(o.StandIn) == 0 {
		errs = append(errs, errors.New("no stand-in command (RunnerOptions.StandIn)"))
	}
	return errors.Join(errs...)
}

// runnerDelivery sends the executor's dispatches to the worker's runner
// delivery, noting when each Deliver began, and every other message to
// the in-process reviewer.
type runnerDelivery struct {
	runner  activities.Deliverer
	inboxes *inboxes
	mu      sync.Mutex
	began   map[string]time.Time // task id → first Deliver of its dispatch
}

// Deliver implements activities.Deliverer.
func (d *runnerDelivery) Deliver(ctx context.Context, in activities.DeliverInput) (activities.DeliverResult, error) {
	m := in.Message
	if m.To != amp.RoleExecutor || m.Type != amp.TypeTaskDispatch {
		return d.inboxes.Deliver(ctx, in)
	}
	d.mu.Lock()
	if _, ok := d.began[m.TaskID]; !ok {
		d.began[m.TaskID] = time.Now()
	}
	d.mu.Unlock()
	return d.runner.Deliver(ctx, in)
}

func (d *runnerDelivery) start(taskID string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.began[taskID]
	return t, ok
}

// RunRunners starts a dev server and a worker whose executor is a runner
// of the stand-in CLI, runs o.Runners tasks at once through it, measures,
// and stops and removes everything.
func RunRunners(ctx context.Context, o RunnerOptions) (RunnerResult, error) {
	if err := o.Validate(); err != nil {
		return RunnerResult{}, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	slots := o.Slots
	if slots == 0 {
		slots = o.Runners
	}
	m := newMachine(ctx)
	tmp, err := os.MkdirTemp("", "ampflow-bench-runners-")
	if err != nil {
		return RunnerResult{}, fmt.Errorf("creating the benchmark directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	timings := filepath.Join(tmp, "timings")
	if err := os.Mkdir(timings, 0o755); err != nil {
		return RunnerResult{}, fmt.Errorf("creating the benchmark directory: %w", err)
	}
	c, stop, err := startTemporal(ctx, tmp, o.Logger)
	if err != nil {
		return RunnerResult{}, err
	}
	defer stop()
	b := &bench{temporal: c, inboxes: &inboxes{}, policy: workflows.NewPolicy(config.Default())}
	if b.repo, err = makeRepo(ctx, filepath.Join(tmp, "repo")); err != nil {
		return RunnerResult{}, err
	}
	dataDir := filepath.Join(tmp, "data")
	cfg := config.Config{DataDir: dataDir}
	cfg.CI.Provider = config.ProviderNone
	cfg.Temporal.TaskQueue = ampflowQueue
	cfg.Runner.Slots = slots
	cfg.Agents.Executor = config.Agent{Mode: config.AgentModeRunner, Runner: "claude", Sandbox: config.SandboxOff,
		Command: append(append([]string(nil), o.StandIn...), timings, activities.PIDDir(dataDir), o.Pace.String(), o.RunTime.String()),
		Timeout: o.RunTime + 5*time.Minute, IdleTimeout: o.RunTime + time.Minute}
	parts, err := workers.Build(workers.Options{Config: cfg, Temporal: c, Logger: o.Logger,
		DecisionKeyFile: filepath.Join(tmp, workers.DecisionKeyFile)})
	if err != nil {
		return RunnerResult{}, err
	}
	defer parts.Close()
	rd := &runnerDelivery{runner: parts.Activities.Delivery, inboxes: b.inboxes, began: map[string]time.Time{}}
	parts.Activities.Delivery = rd
	*parts.Activities.Policy = b.policy
	b.tasks, b.store = parts.Tasks, parts.Store
	b.tasks.Wait = 2 * time.Minute
	w := workers.NewWorker(c, ampflowQueue, parts.Activities, parts.Gate)
	if err := w.Start(); err != nil {
		return RunnerResult{}, fmt.Errorf("starting the benchmark worker: %w", err)
	}
	defer w.Stop()
	// The worker's runner host takes the runs of the tasks it holds on
	// its own queue, as ampflow worker's does.
	hw := workers.NewHostWorker(c, ampflowQueue, parts.Activities)
	if err := hw.Start(); err != nil {
		return RunnerResult{}, fmt.Errorf("starting the benchmark's host worker: %w", err)
	}
	defer hw.Stop()

	r := RunnerResult{Runners: o.Runners, Slots: slots, Runner: "claude", Sandbox: false,
		PaceMS: ms(o.Pace), RunTimeS: o.RunTime.Seconds(), SpreadS: o.Spread.Seconds(), SSOT: b.store.Engine()}
	// One run first, so that no figure pays for first connections.
	warm := b.taskIDs(1)
	if err := b.runnerLifecycle(ctx, 0, warm[0]); err != nil {
		return r, fmt.Errorf("warming up: %w", err)
	}
	if err := os.Remove(filepath.Join(timings, warm[0])); err != nil {
		return r, fmt.Errorf("warming up: the stand-in left no timing: %w", err)
	}
	idle, err := idleCPU(ctx, 2*time.Second)
	if err != nil {
		return r, err
	}
	r.IdleCPUPct = round(idle*100, 1)
	if r.RSSBeforeMB, err = procStatus("VmRSS"); err != nil {
		return r, err
	}

	ids := b.taskIDs(o.Runners)
	began := time.Now()
	s := &sampler{dir: timings, want: o.Runners, runTime: o.RunTime, pace: o.Pace, progress: o.Progress}
	sctx, stop := context.WithCancel(ctx)
	sdone := make(chan error, 1)
	go func() { sdone <- s.run(sctx) }()
	err = pool(ctx, ids, o.Runners, nil, func(ctx context.Context, i int, id string) error {
		if o.Spread > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Until(began.Add(o.Spread * time.Duration(i) / time.Duration(o.Runners)))):
			}
		}
		return b.runnerLifecycle(ctx, i, id)
	})
	stop()
	serr := <-sdone
	r.Elapsed = time.Since(began)
	r.ElapsedS = round(r.Elapsed.Seconds(), 2)
	m.done()
	r.Machine = m
	if err != nil {
		return r, err
	}
	if serr != nil {
		return r, serr
	}
	if err := b.checkSSOT(ids); err != nil {
		return r, err
	}
	r.SubmitRetries = int(b.retries.Load())
	return r, r.figures(s, rd, ids)
}

// figures fills r from the sampler's window and the runs' timings.
func (r *RunnerResult) figures(s *sampler, rd *runnerDelivery, ids []string) error {
	var spawn, exec []time.Duration
	for _, id := range ids {
		t, ok := s.timing(id)
		if !ok {
			return fmt.Errorf("task %s: the stand-in left no timing", id)
		}
		start, ok := rd.start(id)
		if !ok {
			return fmt.Errorf("task %s: its dispatch was never delivered", id)
		}
		spawn = append(spawn, t.spawned.Sub(start))
		exec = append(exec, t.main.Sub(t.spawned))
	}
	r.Runs = len(spawn)
	r.SpawnP50MS, r.SpawnP99MS = ms(Percentile(spawn, 50)), ms(Percentile(spawn, 99))
	r.SpawnMaxMS = ms(Percentile(spawn, 100))
	r.StandInStartP50MS = ms(Percentile(exec, 50))
	r.WindowS = round(s.window.Seconds(), 2)
	r.BusyCPUPct = round(s.cpu*100, 1)
	r.CPUPerRunPct = round((s.cpu*100-r.IdleCPUPct)/float64(r.Runners), 2)
	r.RSSBusyMB = round(s.rss, 1)
	r.RSSPerRunMB = round((s.rss-r.RSSBeforeMB)/float64(r.Runners), 2)
	r.RSSBeforeMB = round(r.RSSBeforeMB, 1)
	return nil
}

// runnerLifecycle starts a task whose executor is the runner and plays
// its reviewer in-process, to done.
func (b *bench) runnerLifecycle(ctx context.Context, _ int, taskID string) error {
	a := &agent{tasks: b.tasks, taskID: taskID, inbox: b.inboxes.open(taskID), retries: &b.retries}
	defer b.inboxes.close(taskID)
	branch, err := b.repo.branch(taskID)
	if err != nil {
		return err
	}
	if err := b.tasks.Start(ctx, task.Input{TaskID: taskID, Plan: plan(b.repo, branch), Coordinator: "ampflow bench", Policy: b.policy}); err != nil {
		return err
	}
	if err := a.review(ctx); err != nil {
		return err
	}
	var out task.Result
	if err := b.temporal.GetWorkflow(ctx, task.WorkflowID(taskID), "").Get(ctx, &out); err != nil {
		return fmt.Errorf("task %s: waiting for the end: %w", taskID, err)
	}
	if out.Status != task.StatusDone {
		return fmt.Errorf("task %s ended %s, not done: %s", taskID, out.Status, out.Reason)
	}
	return nil
}

// runTiming is what one stand-in wrote: when its process started and
// when its main began.
type runTiming struct{ spawned, main time.Time }

// sampler watches the stand-ins start, and once all have started reads
// the process's CPU time and RSS until the first of them is due to end.
type sampler struct {
	dir      string
	want     int
	runTime  time.Duration
	pace     time.Duration
	progress io.Writer

	mu      sync.Mutex
	timings map[string]runTiming
	// The window with every run going: its length, the process's CPU
	// over it (in cores) and its mean RSS (MiB).
	window time.Duration
	cpu    float64
	rss    float64
}

func (s *sampler) timing(id string) (runTiming, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.timings[id]
	return t, ok
}

// run reads the timing files until all have come, then measures the
// window, then keeps reading timing files until ctx ends.
func (s *sampler) run(ctx context.Context) error {
	s.timings = map[string]runTiming{}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastProgress time.Time
	measured := false
	for {
		select {
		case <-ctx.Done():
			s.read()
			if !measured {
				return fmt.Errorf("the %d runs never all ran at once (%d started)", s.want, len(s.timings))
			}
			return nil
		case <-tick.C:
		}
		n, first := s.read()
		if s.progress != nil && time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(s.progress, "runners: %d of %d started\n", n, s.want)
		}
		if measured || n < s.want {
			continue
		}
		measured = true
		// The first stand-in ends runTime after its start: the window
		// closes a little before.
		end := first.Add(s.runTime - max(2*s.pace, 250*time.Millisecond))
		if time.Until(end) < 500*time.Millisecond {
			return fmt.Errorf("the %d runs were never all running for half a second: the last started %s after the first; raise --run-time",
				s.want, time.Since(first).Round(time.Millisecond))
		}
		if err := s.measure(ctx, end); err != nil {
			return err
		}
	}
}

// read takes in the new timing files; it returns how many there are and
// the earliest start.
func (s *sampler) read() (int, time.Time) {
	entries, _ := os.ReadDir(s.dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	for _, e := range entries {
		if _, ok := s.timings[e.Name()]; !ok {
			if t, ok := readTiming(filepath.Join(s.dir, e.Name())); ok {
				s.timings[e.Name()] = t
			}
		}
	}
	for _, t := range s.timings {
		if first.IsZero() || t.spawned.Before(first) {
			first = t.spawned
		}
	}
	return len(s.timings), first
}

func readTiming(path string) (runTiming, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return runTiming{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return runTiming{}, false // not all written yet
	}
	var ns [2]int64
	for i := range ns {
		if ns[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return runTiming{}, false
		}
	}
	return runTiming{spawned: time.Unix(0, ns[0]), main: time.Unix(0, ns[1])}, true
}

// measure reads the CPU time and the RSS from now to end.
func (s *sampler) measure(ctx context.Context, end time.Time) error {
	start := time.Now()
	cpu0, err := cpuTime()
	if err != nil {
		return err
	}
	var sum float64
	var n int
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(end) {
		rss, err := procStatus("VmRSS")
		if err != nil {
			return err
		}
		sum, n = sum+rss, n+1
		select {
		case <-ctx.Done():
			return fmt.Errorf("the runs ended during the measurement: %w", ctx.Err())
		case <-tick.C:
		}
	}
	cpu1, err := cpuTime()
	if err != nil {
		return err
	}
	s.window = time.Since(start)
	s.cpu = (cpu1 - cpu0).Seconds() / s.window.Seconds()
	s.rss = sum / float64(n)
	return nil
}

// idleCPU is the process's CPU, in cores, over d with nothing running.
func idleCPU(ctx context.Context, d time.Duration) (float64, error) {
	c0, err := cpuTime()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(d):
	}
	c1, err := cpuTime()
	if err != nil {
		return 0, err
	}
	return (c1 - c0).Seconds() / time.Since(t0).Seconds(), nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// cpuTime is the user and system CPU time of this process's threads,
// from /proc/self/stat: its children's is not in it.
func cpuTime() (time.Duration, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time: %w", err)
	}
	return parseCPUTime(string(b))
}

// parseCPUTime reads utime and stime, the 14th and 15th fields of a
// /proc/<pid>/stat line (the command, in parentheses, may hold spaces).
func parseCPUTime(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("reading the CPU time: no command in %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is the 3rd field, the state.
	if len(f) < 13 {
		return 0, fmt.Errorf("reading the CPU time: %d fields after the command in /proc/self/stat", len(f))
	}
	var ticks int64
	for _, x := range f[11:13] {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the CPU time: %q: %w", x, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
