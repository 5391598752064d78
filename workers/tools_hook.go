package workers

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ampflow/ampflow/activities/delivery"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// toolHook is the hook runners get (tools.enabled): this executable's
// `ampflow hook`, the API it serves, and the executor's and reviewer's own
// tokens (agents.<role>.token_name), never an admin's.
func toolHook(cfg config.Config, log *slog.Logger) *delivery.ToolHook {
	if !cfg.Tools.Enabled {
		return nil
	}
	bin, err := os.Executable()
	if err != nil {
		log.Warn("runners get no tool hook: the ampflow executable is unknown", "error", err)
		return nil
	}
	h := &delivery.ToolHook{Binary: bin, APIURL: diffBaseURL(cfg), Open: len(cfg.Auth.Tokens) == 0,
		Tokens: runnerTokens(cfg), AskTimeout: cfg.Tools.AskTimeout}
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
// worker serves, reached with the executor's and reviewer's own tokens
// and, for the gate's and contracts' tools, their own gate agents' keys
// (agents.<role>.gate_agent).
func runnerMCP(cfg config.Config) *delivery.RunnerMCP {
	base := strings.TrimRight(diffBaseURL(cfg), "/")
	if base == "" {
		return nil
	}
	return &delivery.RunnerMCP{URL: base + "/mcp", Tokens: runnerTokens(cfg), Open: len(cfg.Auth.Tokens) == 0,
		AgentKeys: cfg.RunnerGateKeys(os.LookupEnv)}
}

// runnerTokens are the API tokens of the executor and the reviewer
// (agents.<role>.token_name), never an admin's.
func runnerTokens(cfg config.Config) map[amp.Role]string {
	tokens := map[amp.Role]string{}
	for role, a := range map[amp.Role]config.Agent{amp.RoleExecutor: cfg.Agents.Executor, amp.RoleReviewer: cfg.Agents.Reviewer} {
		if a.TokenName == "" {
			continue
		}
		if tok, err := cfg.AgentToken(role, a.TokenName); err == nil {
			tokens[role] = tok
		}
	}
	return tokens
}
