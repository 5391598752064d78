package workers

import (
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// TestRunnerMCPGateKeys: the worker hands each role's runner its own gate
// agent's key (agents.<role>.gate_agent), read from the variable that
// agent's key_env names; a role without a gate agent gets none.
func TestRunnerMCPGateKeys(t *testing.T) {
	t.Setenv("EXEC_BOT_KEY", "rs-amp-exec-0123456789")
	t.Setenv("REV_BOT_KEY", "rs-amp-rev-0123456789")
	cfg := config.Default()
	cfg.Gate.Agents = []config.GateAgent{{ID: "exec-bot", KeyEnv: "EXEC_BOT_KEY"}, {ID: "rev-bot", KeyEnv: "REV_BOT_KEY"}}
	cfg.Agents.Executor.GateAgent = "exec-bot"
	m := runnerMCP(cfg)
	if m == nil {
		t.Fatal("no MCP server for runners")
	}
	if len(m.AgentKeys) != 1 || m.AgentKeys[amp.RoleExecutor] != "rs-amp-exec-0123456789" {
		t.Errorf("AgentKeys = %v, want the executor's own only", m.AgentKeys)
	}
}
