package workers

import (
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// StartNotes are the lines `ampflow dev` and `ampflow worker` print at
// start after the agents: the CI provider, or that there is none, and a
// warning for each variable agents.*.env names that lookup (os.LookupEnv)
// finds unset, so a key the agent needs is missed at start, not at its
// first run.
func StartNotes(cfg config.Config, lookup func(string) (string, bool)) [][2]string {
	out := [][2]string{{"ci", ciLine(cfg.CI)}}
	for _, r := range []struct {
		role string
		ag   config.Agent
	}{{"executor", cfg.Agents.Executor}, {"reviewer", cfg.Agents.Reviewer}} {
		for i, e := range r.ag.Env {
			if strings.Contains(e, "=") {
				continue
			}
			if _, ok := lookup(e); !ok {
				out = append(out, [2]string{"warning", fmt.Sprintf("agents.%s.env[%d] names %s, which is unset in the worker's environment: the %s's agent gets no %s",
					r.role, i, e, r.role, e)})
			}
		}
	}
	return out
}

// ciLine says which CI a task's results wait for.
func ciLine(ci config.CI) string {
	switch ci.Provider {
	case config.ProviderGitHub:
		repo := "each task's origin on GitHub"
		if ci.GitHub.Repo != "" {
			repo = ci.GitHub.Repo
		}
		return fmt.Sprintf("github: the checks of %s (timeout %s)", repo, task.FormatDuration(ci.Timeout))
	case config.ProviderCommand:
		return fmt.Sprintf("command %s (timeout %s)", strings.Join(quoteArgs(ci.Command.Run), " "), task.FormatDuration(ci.Command.Timeout))
	}
	return "no CI configured (ci.provider none): results go to review without CI"
}
