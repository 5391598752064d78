package workers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/activities/runner"
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
func ReapRunners(cfg config.Config, log *slog.Logger) []int {
	if cfg.Agents.Executor.Mode != config.AgentModeRunner && cfg.Agents.Reviewer.Mode != config.AgentModeRunner {
		return nil
	}
	dir := activities.PIDDir(agentDelivery(cfg.Agents.Executor, cfg.DataDir).WorkDir)
	killed, err := runner.Reap(dir)
	for _, pid := range killed {
		log.Warn("killed an agent CLI a stopped worker left running", "pid", pid, "pid_dir", dir)
	}
	if err != nil {
		log.Error("reaping the agent CLIs a stopped worker left", "pid_dir", dir, "error", err)
	}
	return killed
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
