package workers

import (
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/config"
	"github.com/ampflow/ampflow/workflows/task"
)

// AgentModes says, one line per agent role, how the worker delivers to
// it: what `ampflow dev` and `ampflow worker` print at start.
func AgentModes(a config.Agents) [][2]string {
	return [][2]string{{"executor", agentMode(a.Executor)}, {"reviewer", agentMode(a.Reviewer)}}
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
