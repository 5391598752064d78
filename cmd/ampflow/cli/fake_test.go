package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/decision"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/workflows"
)

// testNow is the clock of every command test.
var testNow = time.Date(2026, 2, 26, 14, 32, 7, 0, time.UTC)

// fakeTasks stands in for the task workflows: it records every call and
// answers with canned results.
type fakeTasks struct {
	mu    sync.Mutex
	calls []string

	nextID   string
	startErr error
	started  []task.Input
	keys     []string // the Idempotency-Key of each start

	// states are the answers to successive State calls; the last repeats.
	states   []task.State
	stateErr error

	list    []workflows.TaskSummary
	listErr error

	submitRes task.SubmitResult
	submitErr error
	submitted [][]byte

	acked   []string
	ackRes  task.SubmitResult
	decided []decision.Answer
	decErr  error
	// decRes, when set, is what Decide answers.
	decRes *task.DecideResult

	cancelled []task.CancelInput
	replanned []task.ReplanInput
	changeErr error
	beats     []task.HeartbeatInput

	// inboxes are the answers to successive Inbox calls; the last repeats.
	inboxes [][]amp.Message
	pending []decision.Decision
}

var _ workflows.Tasks = (*fakeTasks)(nil)

func (f *fakeTasks) call(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeTasks) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeTasks) Start(ctx context.Context, in task.Input) error {
	f.call("Start %s", in.TaskID)
	f.started = append(f.started, in)
	f.keys = append(f.keys, idempotencyKeyOf(ctx))
	return f.startErr
}

func (f *fakeTasks) StartNext(ctx context.Context, in task.Input, year int) (string, error) {
	f.call("StartNext %d", year)
	in.TaskID = f.nextID
	f.started = append(f.started, in)
	f.keys = append(f.keys, idempotencyKeyOf(ctx))
	return f.nextID, f.startErr
}

func (f *fakeTasks) Submit(_ context.Context, raw []byte) (task.SubmitResult, error) {
	f.call("Submit")
	f.submitted = append(f.submitted, raw)
	return f.submitRes, f.submitErr
}

func (f *fakeTasks) Ack(_ context.Context, msgID string, as amp.Role) (task.SubmitResult, error) {
	f.call("Ack %s %s", msgID, as)
	f.acked = append(f.acked, msgID)
	return f.ackRes, f.submitErr
}

func (f *fakeTasks) Decide(_ context.Context, taskID string, in decision.Answer) (task.DecideResult, error) {
	f.call("Decide %s", taskID)
	f.decided = append(f.decided, in)
	if f.decRes != nil {
		return *f.decRes, f.decErr
	}
	// The API decides as its caller; "ana" stands for the token's name.
	return task.DecideResult{Outcome: decision.Outcome{DecisionID: in.DecisionID, Option: in.Option, By: "ana", Channel: in.Channel},
		Status: task.StatusDispatched}, f.decErr
}

func (f *fakeTasks) Cancel(_ context.Context, taskID string, in task.CancelInput) (task.ChangeResult, error) {
	f.call("Cancel %s", taskID)
	f.cancelled = append(f.cancelled, in)
	return task.ChangeResult{Status: task.StatusTerminated}, f.changeErr
}

func (f *fakeTasks) Replan(_ context.Context, taskID string, in task.ReplanInput) (task.ChangeResult, error) {
	f.call("Replan %s", taskID)
	f.replanned = append(f.replanned, in)
	return task.ChangeResult{Status: task.StatusAwaitingApproval}, f.changeErr
}

func (f *fakeTasks) Heartbeat(_ context.Context, taskID string, in task.HeartbeatInput) error {
	f.call("Heartbeat %s", taskID)
	f.beats = append(f.beats, in)
	return f.changeErr
}

func (f *fakeTasks) State(_ context.Context, taskID string) (task.State, error) {
	f.call("State %s", taskID)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stateErr != nil {
		return task.State{}, f.stateErr
	}
	if len(f.states) == 0 {
		return task.State{}, task.Errorf(task.CodeNotFound, "reading task %s: no such task", taskID)
	}
	st := f.states[0]
	if len(f.states) > 1 {
		f.states = f.states[1:]
	}
	st.TaskID = taskID
	return st, nil
}

func (f *fakeTasks) List(_ context.Context, status task.Status, limit int) ([]workflows.TaskSummary, error) {
	f.call("List %q %d", status, limit)
	return f.list, f.listErr
}

func (f *fakeTasks) Inbox(_ context.Context, role amp.Role) ([]amp.Message, error) {
	f.call("Inbox %s", role)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.inboxes) == 0 {
		return nil, nil
	}
	msgs := f.inboxes[0]
	if len(f.inboxes) > 1 {
		f.inboxes = f.inboxes[1:]
	}
	return msgs, nil
}

func (f *fakeTasks) Pending(context.Context) ([]decision.Decision, error) {
	f.call("Pending")
	return f.pending, nil
}

// runFake runs the command line against f, with a fixed clock, fast
// polls and local state in a fresh data_dir. env adds to the environment.
func runFake(t *testing.T, f *fakeTasks, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	full := map[string]string{"AMPFLOW_DATA_DIR": filepath.Join(t.TempDir(), "data"), "USER": "ana"}
	for k, v := range env {
		if v == "" {
			delete(full, k)
			continue
		}
		full[k] = v
	}
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), Options{
		Args:   args,
		Stdin:  strings.NewReader(stdin),
		Stdout: &stdout,
		Stderr: &stderr,
		LookupEnv: func(k string) (string, bool) {
			v, ok := full[k]
			return v, ok
		},
		Tasks:          func() (workflows.Tasks, error) { return f, nil },
		PollInterval:   time.Millisecond,
		StartCheckWait: 30 * time.Millisecond,
		Now:            func() time.Time { return testNow },
	})
	return result{code, stdout.String(), stderr.String()}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// wantExit fails the test when r did not end with code, showing r.
func wantExit(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	if code == ExitFailed && (r.stderr == "" || strings.Contains(r.stderr, "Usage:")) {
		t.Errorf("a refusal should say why in one line, without usage: %q", r.stderr)
	}
}
