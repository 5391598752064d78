package workflows

import (
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// waitAt is one wait a deadlinesWorkflow starts: when, from the start, it
// begins and its deadline.
type waitAt struct {
	Begin, Deadline time.Duration
}

const signalBeginWait = "begin-wait"

// deadlinesWorkflow starts a wait on the signal for each of waits, every
// wait on the one deadlines, and returns when each timed out, from the
// start.
func deadlinesWorkflow(ctx workflow.Context, waits []waitAt) ([]time.Duration, error) {
	start := workflow.Now(ctx)
	var d deadlines
	fired := make([]time.Duration, len(waits))
	left := len(waits)
	var failed error
	begin := workflow.GetSignalChannel(ctx, signalBeginWait)
	for range waits {
		var i int
		begin.Receive(ctx, &i)
		workflow.Go(ctx, func(ctx workflow.Context) {
			defer func() { left-- }()
			timedOut, err := d.await(ctx, start.Add(waits[i].Deadline), func() bool { return false })
			if err != nil || !timedOut {
				failed = err
				return
			}
			fired[i] = workflow.Now(ctx).Sub(start)
		})
	}
	if err := workflow.Await(ctx, func() bool { return left == 0 }); err != nil {
		return nil, err
	}
	return fired, failed
}

func TestDeadlines(t *testing.T) {
	cases := []struct {
		name   string
		waits  []waitAt
		timers []time.Duration
	}{
		{"SameDeadlineReuses", []waitAt{{0, 300 * time.Second}, {10 * time.Second, 300 * time.Second}},
			[]time.Duration{300 * time.Second}},
		{"LaterDeadlineReusesThenRearms", []waitAt{{0, 300 * time.Second}, {10 * time.Second, 1000 * time.Second}},
			[]time.Duration{300 * time.Second, 700 * time.Second}},
		{"EarlierDeadlineStartsItsOwn", []waitAt{{0, 300 * time.Second}, {10 * time.Second, 40 * time.Second}},
			[]time.Duration{300 * time.Second, 30 * time.Second}},
		{"LaterWaitsAfterTheFirstFired", []waitAt{{0, 300 * time.Second}, {10 * time.Second, 1800 * time.Second}, {20 * time.Second, 600 * time.Second}},
			[]time.Duration{300 * time.Second, 1500 * time.Second, 300 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			env := s.NewTestWorkflowEnvironment()
			env.RegisterWorkflow(deadlinesWorkflow)
			var timers []time.Duration
			env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })
			for i, w := range c.waits {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(signalBeginWait, i) }, w.Begin)
			}
			env.ExecuteWorkflow(deadlinesWorkflow, c.waits)
			if err := env.GetWorkflowError(); err != nil {
				t.Fatalf("workflow failed: %v", err)
			}
			var fired []time.Duration
			if err := env.GetWorkflowResult(&fired); err != nil {
				t.Fatal(err)
			}
			for i, w := range c.waits {
				if fired[i] != w.Deadline {
					t.Errorf("wait %d timed out at +%s, want +%s", i, fired[i], w.Deadline)
				}
			}
			if !slices.Equal(timers, c.timers) {
				t.Errorf("timers started %v, want %v", timers, c.timers)
			}
		})
	}
}
