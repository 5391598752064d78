package config

import (
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config/toolpolicy"
)

func TestToolsConfig(t *testing.T) {
	env := map[string]string{
		"AMPFLOW_TOOLS_RULES":       `[{"tool":"Bash","match":"rm -rf","action":"deny","reason":"no"}]`,
		"AMPFLOW_TOOLS_DEFAULT":     "ask",
		"AMPFLOW_TOOLS_ASK_TIMEOUT": "2m",
	}
	c, err := LoadEnv(New(), "", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tools.Rules) != 1 || c.Tools.Rules[0].Action != toolpolicy.Deny || c.Tools.Default != toolpolicy.Ask || c.Tools.AskTimeout.Minutes() != 2 {
		t.Errorf("tools = %+v", c.Tools)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if len(Default().Tools.Rules) != len(toolpolicy.DefaultRules()) {
		t.Error("the default rules are not tools.rules' default")
	}
}

func TestToolsValidate(t *testing.T) {
	c := Default()
	c.Tools.Rules = []toolpolicy.Rule{{Tool: "(", Action: "maybe"}}
	c.Tools.AskTimeout = 0
	c.Tools.ParkTimeout = -time.Hour
	c.Auth.Tokens = []AuthToken{{Token: "t1", Role: amp.RoleAdmin, Name: "ops"}}
	c.Agents.Executor.TokenName = "ops"
	c.Agents.Reviewer.TokenName = "nobody"
	c.Tools.HookBinary = "ampflow-hook"
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate took bad tools")
	}
	for _, want := range []string{"tools.rules[0].tool", "tools.rules[0].action", "tools.ask_timeout", "tools.park_timeout", "tools.hook_binary", "agents.executor.token_name", "agents.reviewer.token_name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s is not named in %v", want, err)
		}
	}
}

// TestIdleAboveAskTimeout: the defaults agree (a run waiting for an
// answer is not stopped as hung), and a runner whose idle_timeout is not
// above tools.ask_timeout is refused, naming both settings.
func TestIdleAboveAskTimeout(t *testing.T) {
	c := Default()
	if c.Agents.Executor.IdleTimeout <= c.Tools.AskTimeout || c.Agents.Reviewer.IdleTimeout <= c.Tools.AskTimeout {
		t.Errorf("default idle_timeout %s, %s not above tools.ask_timeout %s", c.Agents.Executor.IdleTimeout, c.Agents.Reviewer.IdleTimeout, c.Tools.AskTimeout)
	}
	c.Agents.Executor.Mode, c.Agents.Executor.Runner = AgentModeRunner, "claude"
	c.Agents.Executor.IdleTimeout = 5 * time.Minute
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "agents.executor.idle_timeout") || !strings.Contains(err.Error(), "tools.ask_timeout (10m), not 5m") {
		t.Errorf("Validate = %v; want agents.executor.idle_timeout refused naming tools.ask_timeout", err)
	}
	c.Tools.AskTimeout = 2 * time.Minute
	if err := c.Validate(); err != nil {
		t.Errorf("with ask_timeout below idle_timeout: %v", err)
	}
}
