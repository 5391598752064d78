package workers

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/config"
)

func TestStartNotes(t *testing.T) {
	env := map[string]string{"ANTHROPIC_API_KEY": "k"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, c := range []struct {
		name string
		cfg  config.Config
		want []string
	}{
		{"NoCI", config.Config{CI: config.CI{Provider: config.ProviderNone}},
			[]string{"ci no CI configured (ci.provider none)"}},
		{"GitHub", config.Config{CI: config.CI{Provider: config.ProviderGitHub, Timeout: time.Hour, GitHub: config.CIGitHub{Repo: "acme/app"}}},
			[]string{"ci github: the checks of acme/app (timeout 1h)"}},
		{"Command", config.Config{CI: config.CI{Provider: config.ProviderCommand, Command: config.CICommand{Run: []string{"make", "check"}, Timeout: 20 * time.Minute}}},
			[]string{"ci command make check (timeout 20m)"}},
		{"UnsetEnv", config.Config{CI: config.CI{Provider: config.ProviderNone}, Agents: config.Agents{
			Executor: config.Agent{Env: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MODE=fast"}},
			Reviewer: config.Agent{Env: []string{"GEMINI_API_KEY"}}}},
			[]string{"ci no CI", "warning agents.executor.env[1] names OPENAI_API_KEY, which is unset", "warning agents.reviewer.env[0] names GEMINI_API_KEY"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := StartNotes(c.cfg, lookup)
			if len(got) != len(c.want) {
				t.Fatalf("StartNotes = %q; want %d lines", got, len(c.want))
			}
			for i, w := range c.want {
				if line := got[i][0] + " " + got[i][1]; !strings.HasPrefix(line, w) {
					t.Errorf("line %d = %q; want it to start %q", i, line, w)
				}
			}
		})
	}
}
