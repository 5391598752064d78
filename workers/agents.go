package workers

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/activities/runner"
	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// AgentModes says, one line per agent role, how the worker delivers to
// it: what `ampflow dev` and `ampflow worker` print at start. A runner
// whose CLI does not start is an error naming the key to change.
func AgentModes(ctx context.Context, a config.Agents) ([][2]string, error) {
	out := [][2]string{{"executor", agentMode(a.Executor)}, {"reviewer", agentMode(a.Reviewer)}}
	for i, ag := range []config.Agent{a.Executor, a.Reviewer} {
		if ag.Mode != config.AgentModeRunner {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		version, err := delivery.CheckRunner(cctx, ag)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("agents.%s.command: the %s runner's CLI does not start (%v); install it or name its binary in agents.%s.command",
				out[i][0], ag.Runner, err, out[i][0])
		}
		confined := "sandboxed"
		if ag.Sandbox == config.SandboxOff {
			confined = "NOT sandboxed: agents." + out[i][0] + ".sandbox is off, so the agent can read the worker's keys and database (docs/sandbox.md)"
		} else if err := runner.CheckSandbox(ctx, ""); err != nil {
			return nil, fmt.Errorf("agents.%s.sandbox: the %s runner runs in a sandbox, and %v; install bubblewrap, or set agents.%s.sandbox: off to run it unconfined (docs/sandbox.md)",
				out[i][0], ag.Runner, err, out[i][0])
		}
		out[i][1] = fmt.Sprintf("runner %s %s (timeout %s, idle %s), %s", ag.Runner, version,
			task.FormatDuration(ag.Timeout), task.FormatDuration(ag.IdleTimeout), confined)
	}
	return out, nil
}

// ReapRunners kills the agent CLIs a crashed worker on the same data_dir
// left running, from their pid files, and logs each. It does nothing
// when no agent runs in runner mode.
func ReapRunners(cfg config.Config, log *slog.Logger) []runner.Reaped {
	if cfg.Agents.Executor.Mode != config.AgentModeRunner && cfg.Agents.Reviewer.Mode != config.AgentModeRunner && !cfg.Goals.Planner.On() {
		return nil
	}
	dir := activities.PIDDir(agentDelivery(cfg.Agents.Executor, cfg.DataDir).WorkDir)
	runs, err := runner.ReapRuns(dir)
	for _, r := range runs {
		if r.Killed {
			log.Warn("killed an agent CLI a stopped worker left running", "pid", r.PID, "pid_dir", dir)
		}
	}
	if err != nil {
		log.Error("reaping the agent CLIs a stopped worker left", "pid_dir", dir, "error", err)
	}
	return runs
}

// runRecoverer is what RecoverRuns needs of Temporal and of the tasks.
type runRecoverer interface {
	CompleteActivityByID(ctx context.Context, namespace, workflowID, runID, activityID string, result interface{}, err error) error
}

// ErrWorkerDied is the error type of a run's activity attempt that a
// starting worker fails because the worker that held it died.
const ErrWorkerDied = "WorkerDied"

// RecoverRuns tells each task whose run a dead worker held, on its
// timeline, that the worker died and the run is resumed (the task reports
// recovering until the retried run starts), and fails the
// run's orphaned activity attempt at once so the task delivers again in
// seconds rather than after the activity's heartbeat timeout.
func RecoverRuns(ctx context.Context, runs []runner.Reaped, tc runRecoverer, namespace string, tasks interface {
	Heartbeat(ctx context.Context, taskID string, in task.HeartbeatInput) error
}, log *slog.Logger) {
	// A run whose CLI ran is named by its pid file and by its attempt
	// record: it is told once, from the pid file, which knows its session.
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, func(a, b runner.Reaped) int { return cmp.Compare(min(b.PID, 1), min(a.PID, 1)) })
	told := map[runner.RunOwner]bool{}
	for _, r := range runs {
		o := r.Owner
		if o == nil || o.TaskID == "" {
			continue
		}
		key := runner.RunOwner{TaskID: o.TaskID, MsgID: o.MsgID, WorkflowID: o.WorkflowID, RunID: o.RunID, ActivityID: o.ActivityID}
		if told[key] {
			continue
		}
		told[key] = true
		note := fmt.Sprintf("the worker running the %s's run on %s died (its run started %s); ", o.Role, o.MsgID, r.Since.UTC().Format("15:04:05"))
		if r.PID == 0 {
			note = fmt.Sprintf("the worker holding the %s's run on %s died before the run's CLI started (it asked for a slot at %s); ", o.Role, o.MsgID, r.Since.UTC().Format("15:04:05"))
		}
		if o.Session != "" {
			note += "resuming session " + o.Session
		} else {
			note += "running it again"
		}
		if tasks != nil {
			// From no role: the run's own heartbeats, which replace the
			// last one from their role, leave this note on the timeline.
			// Recovering: the task reports recovering until the retried
			// run's first heartbeat.
			rec := &task.Recovery{Role: amp.Role(o.Role), MsgID: o.MsgID, Session: o.Session, Note: note}
			if err := tasks.Heartbeat(ctx, o.TaskID, task.HeartbeatInput{Note: note, Recovering: rec}); err != nil {
				log.Warn("telling a task its run's worker died", "task", o.TaskID, "error", err)
			}
		}
		if tc != nil && o.WorkflowID != "" && o.ActivityID != "" {
			err := tc.CompleteActivityByID(ctx, namespace, o.WorkflowID, o.RunID, o.ActivityID, nil,
				temporal.NewApplicationError(note, ErrWorkerDied))
			if err != nil {
				log.Info("failing a dead worker's run attempt (it may have ended already)", "task", o.TaskID, "msg_id", o.MsgID, "error", err)
			}
		}
		log.Warn("a dead worker's run is resumed", "task", o.TaskID, "msg_id", o.MsgID, "role", o.Role, "session", o.Session)
	}
}

// FinishCleanups finishes removing the runner checkouts under this
// worker's data_dir whose removal a stopped worker left half done (their
// marks in the SSOT), salvaging nothing, and logs each.
func FinishCleanups(cfg config.Config, store *ssot.DB, log *slog.Logger) {
	if store == nil || cfg.Agents.Executor.Mode != config.AgentModeRunner && cfg.Agents.Reviewer.Mode != config.AgentModeRunner {
		return
	}
	under := filepath.Join(agentDelivery(cfg.Agents.Executor, cfg.DataDir).WorkDir, "worktrees") + string(filepath.Separator)
	mine := ownMarks{store, under}
	done, err := activities.FinishMarkedWorktrees(context.Background(), mine)
	for _, m := range done {
		log.Warn("finished removing a runner checkout a stopped worker left", "task", m.TaskID, "path", m.Path, "marked_at", m.MarkedAt)
	}
	if err != nil {
		log.Error("finishing the checkouts a stopped worker was removing", "error", err)
	}
}

// ownMarks are the marks of the checkouts under one data_dir.
type ownMarks struct {
	*ssot.DB
	under string
}

func (o ownMarks) MarkedWorktrees(ctx context.Context, limit int) ([]ssot.WorktreeMark, error) {
	all, err := o.DB.MarkedWorktrees(ctx, limit)
	var out []ssot.WorktreeMark
	for _, m := range all {
		if strings.HasPrefix(m.Path, o.under) {
			out = append(out, m)
		}
	}
	return out, err
}

func agentMode(a config.Agent) string {
	switch a.Mode {
	case config.AgentModeCommand:
		return fmt.Sprintf("command %s (timeout %s)", strings.Join(quoteArgs(a.Command), " "), task.FormatDuration(a.Timeout))
	case config.AgentModeWebhook:
		signed := "signed"
		if a.WebhookSecret == "" {
			signed = "unsigned"
		}
		return fmt.Sprintf("webhook %s (%s)", a.WebhookURL, signed)
	}
	return "pull (reads its inbox through the CLI or the HTTP API)"
}

// quoteArgs quotes the words a reader could not tell apart otherwise.
func quoteArgs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = fmt.Sprintf("%q", a)
		}
		out[i] = a
	}
	return out
}

// SandboxWarnings names each runner role whose runs are not confined
// (agents.<role>.sandbox: off), for the dashboard's every page.
func SandboxWarnings(a config.Agents) []string {
	var out []string
	for _, r := range []struct {
		role string
		ag   config.Agent
	}{{"executor", a.Executor}, {"reviewer", a.Reviewer}} {
		if r.ag.Mode == config.AgentModeRunner && r.ag.Sandbox == config.SandboxOff {
			out = append(out, fmt.Sprintf("agents.%s.sandbox is off: the %s's %s runs are not confined, and the agent can read the worker's keys and database (docs/sandbox.md)",
				r.role, r.role, r.ag.Runner))
		}
	}
	return out
}
