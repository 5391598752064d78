package workers

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/amp/task"
)

type fakeRecoverer struct{ failed []string }

func (f *fakeRecoverer) CompleteActivityByID(_ context.Context, ns, wf, run, act string, _ interface{}, err error) error {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrWorkerDied {
		return errors.New("not a WorkerDied failure")
	}
	f.failed = append(f.failed, ns+"/"+wf+"/"+run+"/"+act)
	return nil
}

type fakeBeats struct {
	notes      map[string]string
	recovering map[string]*task.Recovery
}

func (f *fakeBeats) Heartbeat(_ context.Context, taskID string, in task.HeartbeatInput) error {
	f.notes[taskID] = string(in.From) + ": " + in.Note
	if f.recovering != nil {
		f.recovering[taskID] = in.Recovering
	}
	return nil
}

// TestRecoverRuns: each run a dead worker held is named on its task's
// timeline with the session it resumes, the task is told it recovers that
// run (it reports recovering), and its activity attempt is
// failed at once so it is delivered again; a pid file naming no task is
// passed over.
func TestRecoverRuns(t *testing.T) {
	since := time.Date(2026, 11, 28, 6, 31, 12, 0, time.UTC)
	runs := []runner.Reaped{
		{PID: 10, Killed: true, Since: since, Owner: &runner.RunOwner{TaskID: "T-2026-008", MsgID: "task_dispatch-T-2026-008-1",
			Role: "executor", Session: "S-1", WorkflowID: "task-T-2026-008", RunID: "r1", ActivityID: "7"}},
		{PID: 11, Since: since},
	}
	tc, beats := &fakeRecoverer{}, &fakeBeats{notes: map[string]string{}, recovering: map[string]*task.Recovery{}}
	var logs bytes.Buffer
	RecoverRuns(context.Background(), runs, tc, "default", beats, slog.New(slog.NewTextHandler(&logs, nil)))
	if len(tc.failed) != 1 || tc.failed[0] != "default/task-T-2026-008/r1/7" {
		t.Errorf("failed attempts %v, want the executor's", tc.failed)
	}
	note := beats.notes["T-2026-008"]
	if !strings.HasPrefix(note, ": the worker running the executor's run on task_dispatch-T-2026-008-1 died") ||
		!strings.Contains(note, "06:31:12") || !strings.HasSuffix(note, "resuming session S-1") || len(beats.notes) != 1 {
		t.Errorf("notes %v", beats.notes)
	}
	if r := beats.recovering["T-2026-008"]; r == nil || r.Role != "executor" || r.MsgID != "task_dispatch-T-2026-008-1" || r.Session != "S-1" {
		t.Errorf("recovering %+v, want the executor's run on task_dispatch-T-2026-008-1, session S-1", r)
	}
}

// TestRecoverRunsAttempts: a run whose CLI had not started (an attempt
// record, PID 0) is recovered too, and a run named by both its attempt
// record and its pid file is told once, with the pid file's session.
func TestRecoverRunsAttempts(t *testing.T) {
	since := time.Date(2026, 11, 28, 6, 31, 12, 0, time.UTC)
	owner := func(task, session string) *runner.RunOwner {
		return &runner.RunOwner{TaskID: task, MsgID: "task_dispatch-" + task + "-1", Role: "executor", Session: session,
			WorkflowID: "task-" + task, RunID: "r1", ActivityID: "7"}
	}
	runs := []runner.Reaped{
		{PID: 0, Since: since, Owner: owner("T-2026-008", "")},
		{PID: 0, Since: since, Owner: owner("T-2026-009", "")},
		{PID: 12, Killed: true, Since: since, Owner: owner("T-2026-008", "S-8")},
	}
	tc, beats := &fakeRecoverer{}, &fakeBeats{notes: map[string]string{}}
	RecoverRuns(context.Background(), runs, tc, "default", beats, slog.New(slog.DiscardHandler))
	if len(tc.failed) != 2 {
		t.Errorf("failed attempts %v, want one per run", tc.failed)
	}
	if n := beats.notes["T-2026-008"]; !strings.HasSuffix(n, "resuming session S-8") {
		t.Errorf("T-2026-008's note %q, want the pid file's session", n)
	}
	if n := beats.notes["T-2026-009"]; !strings.Contains(n, "died before the run's CLI started") || !strings.HasSuffix(n, "running it again") {
		t.Errorf("T-2026-009's note %q", n)
	}
}
