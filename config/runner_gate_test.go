package config

import (
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
)

func TestRunnerGateAgents(t *testing.T) {
	env := map[string]string{
		"AMPFLOW_GATE_AGENTS":                `[{"id":"exec-bot","key_env":"EXEC_BOT_KEY"},{"id":"rev-bot","key_env":"REV_BOT_KEY"},{"id":"other","key_env":"OTHER_KEY"}]`,
		"AMPFLOW_AGENTS_EXECUTOR_GATE_AGENT": "exec-bot",
		"AMPFLOW_AGENTS_REVIEWER_GATE_AGENT": "rev-bot",
	}
	c, err := LoadEnv(New(), "", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if c.Agents.Executor.GateAgent != "exec-bot" || c.Agents.Reviewer.GateAgent != "rev-bot" {
		t.Fatalf("agents = %+v", c.Agents)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	keys := map[string]string{"EXEC_BOT_KEY": "rs-amp-exec-0123456789", "REV_BOT_KEY": "rs-amp-rev-0123456789", "OTHER_KEY": "rs-amp-other-0123456789"}
	got := c.RunnerGateKeys(func(k string) (string, bool) { v, ok := keys[k]; return v, ok })
	if len(got) != 2 || got[amp.RoleExecutor] != keys["EXEC_BOT_KEY"] || got[amp.RoleReviewer] != keys["REV_BOT_KEY"] {
		t.Errorf("RunnerGateKeys = %v", got)
	}
	admin := c
	admin.Auth.Tokens = []AuthToken{{Token: keys["EXEC_BOT_KEY"], Role: amp.RoleAdmin, Name: "ops"}}
	if got := admin.RunnerGateKeys(func(k string) (string, bool) { v, ok := keys[k]; return v, ok }); got[amp.RoleExecutor] != "" {
		t.Errorf("a gate key that is also an admin's token was handed out: %v", got)
	}
	delete(keys, "REV_BOT_KEY")
	if got := c.RunnerGateKeys(func(k string) (string, bool) { v, ok := keys[k]; return v, ok }); len(got) != 1 || got[amp.RoleReviewer] != "" {
		t.Errorf("a role whose key is not set got %v", got)
	}

	t.Run("Refused", func(t *testing.T) {
		for name, set := range map[string]func(c *Config){
			"Unknown": func(c *Config) { c.Agents.Reviewer.GateAgent = "nobody" },
			"Shared":  func(c *Config) { c.Agents.Reviewer.GateAgent = "exec-bot" },
		} {
			bad := c
			set(&bad)
			err := bad.Validate()
			if err == nil || !strings.Contains(err.Error(), "agents.reviewer.gate_agent") || strings.Contains(err.Error(), "agents.executor.gate_agent:") {
				t.Errorf("%s: Validate = %v, want agents.reviewer.gate_agent named", name, err)
			}
		}
	})
}
