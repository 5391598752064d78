package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/child"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// Command provider defaults.
const (
	DefaultHeartbeatEvery   = 10 * time.Second
	commandTailBytes        = 4 << 10
	commandKillGracePeriod  = 5 * time.Second
	commandCleanupTimeoutIn = time.Minute
)

// CommandCI runs a command in a fresh detached worktree of the commit:
// exit status 0 passes, anything else (a timeout included) fails with the
// tail of the output in Detail. The whole output and the result are kept
// in the SSOT's files, by task and commit, so the same commit with the
// same command runs once.
type CommandCI struct {
	Argv    []string
	Timeout time.Duration // zero means config.DefaultCICommandTimeout
	// Env lets the command see more than the base environment (see
	// childEnv): NAME passes the worker's NAME, NAME=value sets it.
	Env []string
	// Secrets are masked in the output before it is kept or shown.
	Secrets *child.Scrubber
	Store   *TaskRecord
	Git     *Git
	// HeartbeatEvery is the heartbeat period inside an activity; zero
	// means DefaultHeartbeatEvery.
	HeartbeatEvery time.Duration

	mu      sync.Mutex
	running map[string]*sync.Mutex
}

// Status implements CIProvider.
func (c *CommandCI) Status(ctx context.Context, in CIStatusInput) (CIStatusResult, error) {
	if !validName(in.TaskID) {
		return CIStatusResult{}, invalid("task id %q cannot name an SSOT directory", in.TaskID)
	}
	var err error
	if in.Repo, err = c.Git.Local(ctx, in.Repo, false); err != nil {
		return CIStatusResult{}, err
	}
	commit, err := commitOf(ctx, c.Git, in)
	if err != nil {
		return CIStatusResult{}, err
	}
	// One run per task and commit at a time; the second caller reads the
	// first one's cached result.
	lock := c.lock(in.TaskID + "/" + commit)
	lock.Lock()
	defer lock.Unlock()
	if run, ok, err := c.Store.cachedCI(ctx, in.TaskID, commit); err != nil {
		return CIStatusResult{}, err
	} else if ok && slices.Equal(run.Argv, c.Argv) {
		return run.kept(), nil
	}
	run, logPath, err := c.run(ctx, in, commit)
	if logPath != "" {
		defer os.Remove(logPath)
	}
	if err != nil {
		return CIStatusResult{}, err
	}
	if err := c.Store.saveCI(ctx, in.TaskID, run, logPath); err != nil {
		return CIStatusResult{}, err
	}
	return run.kept(), nil
}

func (c *CommandCI) lock(key string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == nil {
		c.running = map[string]*sync.Mutex{}
	}
	m := c.running[key]
	if m == nil {
		m = &sync.Mutex{}
		c.running[key] = m
	}
	return m
}

// run checks the commit out in a temporary worktree, runs the command
// there and removes the worktree whatever happens. The output is in the
// temporary file logPath, which the caller removes.
func (c *CommandCI) run(ctx context.Context, in CIStatusInput, commit string) (_ ciRun, logPath string, _ error) {
	name := strings.Join(c.Argv, " ")
	wt, err := os.MkdirTemp("", "ampflow-ci-")
	if err != nil {
		return ciRun{}, "", fmt.Errorf("running CI of %s: %w", ShortHash(commit), err)
	}
	defer c.removeWorktree(ctx, in.Repo, wt)
	// Hooks of the repository must not run on checkout.
	if _, err := c.Git.run(ctx, in.Repo, "-c", "core.hooksPath="+os.DevNull, "worktree", "add", "--detach", wt, commit); err != nil {
		return ciRun{}, "", fmt.Errorf("checking out %s of %s for CI: %w", ShortHash(commit), in.Repo, err)
	}

	logf, err := os.CreateTemp("", "ampflow-ci-*.log")
	if err != nil {
		return ciRun{}, "", fmt.Errorf("running CI of %s: %w", ShortHash(commit), err)
	}
	logPath = logf.Name()
	defer logf.Close()
	tail := &child.Tail{Max: commandTailBytes}
	out := c.Secrets.Writer(&teeWriter{file: logf, tail: tail})

	timeout := c.Timeout
	if timeout <= 0 {
		timeout = config.DefaultCICommandTimeout
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = wt
	// The command is the executor's code: it sees none of the worker's
	// secrets, only what c.Env lets through.
	cmd.Env = child.Env(nil, c.Env, "GIT_TERMINAL_PROMPT=0", "AMPFLOW_COMMIT="+commit)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = commandKillGracePeriod
	killGroup(cmd)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return ciRun{}, logPath, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("command CI: cannot start %q: %v", name, err), ErrCIConfig, err)
	}
	stop := c.heartbeat(ctx, commit)
	err = cmd.Wait()
	stop()
	took := time.Since(start)
	if ctx.Err() != nil {
		return ciRun{}, logPath, fmt.Errorf("running CI %q on %s: %w", name, ShortHash(commit), ctx.Err())
	}

	run := ciRun{Commit: commit, Argv: c.Argv, Duration: took.Round(time.Millisecond).String(), FinishedAt: time.Now().UTC().Format(time.RFC3339)}
	var ee *exec.ExitError
	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		run.ExitCode = -1
		fmt.Fprintf(out, "\nampflow: timed out after %s\n", task.FormatDuration(timeout))
	case err == nil:
	case errors.As(err, &ee):
		run.ExitCode = ee.ExitCode()
	default:
		return ciRun{}, logPath, fmt.Errorf("running CI %q on %s: %w", name, ShortHash(commit), err)
	}
	if err := out.Close(); err != nil {
		return ciRun{}, logPath, fmt.Errorf("keeping the CI log of %s: %w", ShortHash(commit), err)
	}
	if err := logf.Close(); err != nil {
		return ciRun{}, logPath, fmt.Errorf("keeping the CI log of %s: %w", ShortHash(commit), err)
	}
	if run.ExitCode == 0 {
		run.Result = CIStatusResult{State: CIPassed, Checks: map[string]string{name: string(CIPassed)}}
	} else {
		run.Result = CIStatusResult{
			State:   CIFailed,
			Failing: []string{name},
			Checks:  map[string]string{name: string(CIFailed)},
			Detail:  tail.String(),
		}
	}
	return run, logPath, nil
}

// removeWorktree deletes the temporary worktree even when ctx is done.
func (c *CommandCI) removeWorktree(ctx context.Context, repo, wt string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandCleanupTimeoutIn)
	defer cancel()
	c.Git.run(ctx, repo, "worktree", "remove", "--force", wt) //nolint:errcheck // RemoveAll and prune follow
	os.RemoveAll(wt)
	c.Git.run(ctx, repo, "worktree", "prune") //nolint:errcheck // best effort
}

// heartbeat records heartbeats while a command runs; outside an activity
// (plain unit tests) it does nothing.
func (c *CommandCI) heartbeat(ctx context.Context, commit string) (stop func()) {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := c.HeartbeatEvery
	if every <= 0 {
		every = DefaultHeartbeatEvery
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, "running CI on "+commit)
			}
		}
	})
	activity.RecordHeartbeat(ctx, "starting CI on "+commit)
	return func() { close(done); wg.Wait() }
}

// teeWriter writes a command's output to its log file and its tail.
type teeWriter struct {
	file *os.File
	tail *child.Tail
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.tail.Write(p)
	return w.file.Write(p)
}
