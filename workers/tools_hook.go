package workers

import (
	"log/slog"
	"os"

	"github.com/ampflow/ampflow/activities"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// toolHook is the hook runners get (tools.enabled): this executable's
// `ampflow hook`, the API it serves, and the executor's and reviewer's own
// tokens (agents.<role>.token_name), never an admin's.
func toolHook(cfg config.Config, log *slog.Logger) *activities.ToolHook {
	if !cfg.Tools.Enabled {
		return nil
	}
	bin, err := os.Executable()
	if err != nil {
		log.Warn("runners get no tool hook: the ampflow executable is unknown", "error", err)
		return nil
	}
	h := &activities.ToolHook{Binary: bin, APIURL: diffBaseURL(cfg), Open: len(cfg.Auth.Tokens) == 0,
		Tokens: map[amp.Role]string{}, AskTimeout: cfg.Tools.AskTimeout}
	for role, a := range map[amp.Role]config.Agent{amp.RoleExecutor: cfg.Agents.Executor, amp.RoleReviewer: cfg.Agents.Reviewer} {
		if a.TokenName == "" {
			continue
		}
		if tok, err := cfg.AgentToken(role, a.TokenName); err == nil {
			h.Tokens[role] = tok
		}
	}
	return h
}
