package workers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows/task"
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
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		version, err := activities.CheckRunner(ctx, ag)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("agents.%s.command: the %s runner's CLI does not start (%v); install it or name its binary in agents.%s.command",
				out[i][0], ag.Runner, err, out[i][0])
		}
		out[i][1] = fmt.Sprintf("runner %s %s (timeout %s, idle %s)", ag.Runner, version,
			task.FormatDuration(ag.Timeout), task.FormatDuration(ag.IdleTimeout))
	}
	return out, nil
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
