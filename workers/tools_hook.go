package workers

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/runcred"
	"github.com/ampflow/ampflow/config"
)

// toolHook is the hook runners get (tools.enabled): the API this worker
// serves, asked with each run's own credential (runCredentials), over
// HTTP by Claude Code when the API is this process's, by OpenCode's
// plugin, and through ampflow-hook (hookBinary) or this executable's
// `ampflow hook` by the other CLIs.
func toolHook(cfg config.Config, log *slog.Logger) *delivery.ToolHook {
	if !cfg.Tools.Enabled {
		return nil
	}
	bin, err := os.Executable()
	if err != nil {
		log.Warn("runners get no tool hook: the ampflow executable is unknown", "error", err)
		return nil
	}
	h := &delivery.ToolHook{Binary: bin, HookBinary: hookBinary(cfg, bin, log), APIURL: diffBaseURL(cfg),
		HTTP: localAPI(cfg) && cfg.DataDir != "", AskTimeout: cfg.Tools.AskTimeout}
	if cfg.DataDir != "" {
		// Gemini CLI and OpenCode runners take the hook from files.
		err := h.Prepare(filepath.Join(cfg.DataDir, "tools"))
		gemini := false
		for _, a := range []config.Agent{cfg.Agents.Executor, cfg.Agents.Reviewer} {
			gemini = gemini || a.Mode == config.AgentModeRunner && a.Runner == "gemini"
		}
		// Gemini's file is written last: a worker with no Gemini runner
		// need not say it would be skipped.
		if err != nil && (h.OpenCodePlugin == "" || gemini) {
			log.Warn("a runner gets no tool hook", "error", err, "gemini", h.GeminiSettings != "", "opencode", h.OpenCodePlugin != "")
		}
	}
	return h
}

// runnerMCP is ampflow's MCP server as runners get it: the API this
// worker serves, reached with each run's own credential and, for the
// gate's and contracts' tools, the role's own gate agent's key
// (agents.<role>.gate_agent).
func runnerMCP(cfg config.Config) *delivery.RunnerMCP {
	base := strings.TrimRight(diffBaseURL(cfg), "/")
	if base == "" {
		return nil
	}
	return &delivery.RunnerMCP{URL: base + "/mcp", AgentKeys: cfg.RunnerGateKeys(os.LookupEnv)}
}

// runCredentials mint runner runs their credentials, keyed from the
// decision key, under the names the roles' tokens give them
// (agents.<role>.token_name), or the roles' own.
func runCredentials(cfg config.Config, decisionKey []byte) *delivery.RunCredentials {
	names := map[amp.Role]string{}
	for role, a := range map[amp.Role]config.Agent{amp.RoleExecutor: cfg.Agents.Executor, amp.RoleReviewer: cfg.Agents.Reviewer} {
		if a.TokenName != "" {
			names[role] = a.TokenName
		}
	}
	return &delivery.RunCredentials{Key: runcred.Key(decisionKey), Names: names}
}

// BridgeCommand is the ampflow argument that runs a sandboxed run's
// network bridge (runner.BridgeMain) in place of the command line.
const BridgeCommand = "sandbox-bridge"

// egress gives sandboxed runs a network of their own, bridged by this
// executable; without it (an unknown executable) they share the worker's.
func egress(cfg config.Config) *delivery.Egress {
	bin, err := os.Executable()
	if err != nil {
		return nil
	}
	return &delivery.Egress{Allow: cfg.Sandbox.Network.Allow, Bridge: []string{bin, BridgeCommand}, AskTimeout: cfg.Tools.AskTimeout}
}
