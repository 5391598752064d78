package config

import "github.com/ampflow/ampflow/amp"

func init() {
	defaults["agents.executor.gate_agent"] = ""
	defaults["agents.reviewer.gate_agent"] = ""
}

// runnerGateAgents are the roles whose runners may present a gate key,
// with their gate_agent's key.
func (c Config) runnerGateAgents() []struct {
	Key, Agent string
	Role       amp.Role
} {
	return []struct {
		Key, Agent string
		Role       amp.Role
	}{
		{"agents.executor.gate_agent", c.Agents.Executor.GateAgent, amp.RoleExecutor},
		{"agents.reviewer.gate_agent", c.Agents.Reviewer.GateAgent, amp.RoleReviewer},
	}
}

// validateRunnerGate checks agents.<role>.gate_agent: a gate.agents
// entry, and never the same for two roles, so one role's runner cannot
// sign as the other's agent.
func (c Config) validateRunnerGate(ps *problems) {
	seen := map[string]string{}
	for _, a := range c.runnerGateAgents() {
		if a.Agent == "" {
			continue
		}
		if _, ok := c.gateAgent(a.Agent); !ok {
			ps.add(a.Key, "names %q, which is not an id in gate.agents", a.Agent)
			continue
		}
		if other, ok := seen[a.Agent]; ok {
			ps.add(a.Key, "names %q, as %s does: each role needs its own gate agent", a.Agent, other)
		}
		seen[a.Agent] = a.Key
	}
}

func (c Config) gateAgent(id string) (GateAgent, bool) {
	for _, a := range c.Gate.Agents {
		if a.ID == id {
			return a, true
		}
	}
	return GateAgent{}, false
}

// RunnerGateKeys are the gate keys the executor's and the reviewer's
// runners present to ampflow's MCP server: each role's own gate_agent's
// key, read with lookup from the variable its key_env names. A role
// without a gate_agent, or whose key is not set or is also an admin's
// API token, gets none.
func (c Config) RunnerGateKeys(lookup func(string) (string, bool)) map[amp.Role]string {
	keys := map[amp.Role]string{}
	for _, a := range c.runnerGateAgents() {
		if a.Agent == "" {
			continue
		}
		g, ok := c.gateAgent(a.Agent)
		if !ok {
			continue
		}
		if key, ok := lookup(g.KeyEnv); ok && key != "" && !c.adminToken(key) {
			keys[a.Role] = key
		}
	}
	return keys
}

func (c Config) adminToken(s string) bool {
	for _, t := range c.Auth.Tokens {
		if t.Role == amp.RoleAdmin && t.Token == s {
			return true
		}
	}
	return false
}
