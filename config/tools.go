package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config/toolpolicy"
)

// Tools is the policy every tool call of an agent CLI is decided by,
// before it runs: the runners' own (Claude Code gets a PreToolUse hook)
// and those of CLIs run by hand with `ampflow hook` (docs/tools.md).
type Tools struct {
	// Enabled gives the runners that support it (claude) the hook.
	Enabled bool `mapstructure:"enabled"`
	// Rules are matched in order; the first match decides. Set, they
	// replace the default rules (toolpolicy.DefaultRules) whole.
	Rules []toolpolicy.Rule `mapstructure:"rules"`
	// Default applies when no rule matches: allow, deny or ask.
	Default toolpolicy.Action `mapstructure:"default"`
	// AskTimeout is how long the CLI waits, running, for the admins to
	// answer an ask; past it a runner's run is parked (docs/tools.md).
	AskTimeout time.Duration `mapstructure:"ask_timeout"`
	// ParkTimeout is how long an ask stays open after AskTimeout, its run
	// parked, before the call is denied (its decision expires into deny).
	ParkTimeout time.Duration `mapstructure:"park_timeout"`
	// HookBinary is the ampflow-hook executable Codex and Gemini CLI
	// runners run before each tool; empty: the one beside the ampflow
	// executable, else on PATH, else `ampflow hook` (docs/tools.md).
	HookBinary string `mapstructure:"hook_binary"`
}

// DefaultAskTimeout is tools.ask_timeout's default.
const DefaultAskTimeout = 10 * time.Minute

// DefaultParkTimeout is tools.park_timeout's default: a night and a day.
const DefaultParkTimeout = 24 * time.Hour

var toolDefaults = map[string]any{
	"tools.enabled":      true,
	"tools.rules":        toolpolicy.DefaultRules(),
	"tools.default":      toolpolicy.Allow,
	"tools.ask_timeout":  DefaultAskTimeout,
	"tools.park_timeout": DefaultParkTimeout,
	"tools.hook_binary":  "",

	"agents.executor.token_name": "",
	"agents.reviewer.token_name": "",
}

func init() {
	for k, v := range toolDefaults {
		defaults[k] = v
	}
}

var toolRulesType = reflect.TypeOf([]toolpolicy.Rule{})

// jsonToolRules reads tools.rules set in the environment, as a JSON
// array: AMPFLOW_TOOLS_RULES='[{"tool":"Bash","match":"rm -rf","action":"deny"}]'.
func jsonToolRules(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String || t != toolRulesType {
		return data, nil
	}
	var rules []toolpolicy.Rule
	s := strings.TrimSpace(data.(string))
	if s == "" {
		return []toolpolicy.Rule{}, nil
	}
	if err := json.Unmarshal([]byte(s), &rules); err != nil {
		return nil, fmt.Errorf("a JSON array is expected: %w", err)
	}
	return rules, nil
}

// ToolPolicy compiles tools.rules and tools.default.
func (c Config) ToolPolicy() (*toolpolicy.Policy, error) {
	return toolpolicy.New(c.Tools.Rules, c.Tools.Default)
}

func (c Config) validateTools(ps *problems) {
	for _, p := range toolpolicy.Check(c.Tools.Rules, c.Tools.Default) {
		ps.add("tools."+p.Field, "%s", p.Message)
	}
	ps.positive("tools.ask_timeout", c.Tools.AskTimeout)
	// A CLI waiting for an answer prints nothing: a run whose silence
	// bound is not above the wait would be stopped as hung mid-ask.
	for _, r := range []struct {
		role string
		ag   Agent
	}{{"executor", c.Agents.Executor}, {"reviewer", c.Agents.Reviewer}} {
		if c.Tools.Enabled && r.ag.Mode == AgentModeRunner && r.ag.IdleTimeout > 0 && r.ag.IdleTimeout <= c.Tools.AskTimeout {
			ps.add("agents."+r.role+".idle_timeout", "must be above tools.ask_timeout (%s), not %s: a CLI waiting for the admins' answer prints nothing and would be stopped as hung; raise agents.%s.idle_timeout or lower tools.ask_timeout",
				task.FormatDuration(c.Tools.AskTimeout), task.FormatDuration(r.ag.IdleTimeout), r.role)
		}
	}
	ps.positive("tools.park_timeout", c.Tools.ParkTimeout)
	if b := c.Tools.HookBinary; b != "" {
		if err := executable(b); err != nil {
			ps.add("tools.hook_binary", "%v", err)
		}
	}
	for _, a := range []struct {
		key  string
		role amp.Role
		name string
	}{{"agents.executor.token_name", amp.RoleExecutor, c.Agents.Executor.TokenName}, {"agents.reviewer.token_name", amp.RoleReviewer, c.Agents.Reviewer.TokenName}} {
		if a.name == "" {
			continue
		}
		if _, err := c.AgentToken(a.role, a.name); err != nil {
			ps.add(a.key, "%v", err)
		}
	}
}

// AgentToken returns the secret of the auth.tokens entry named name, which
// must be of role (agents.<role>.token_name).
func (c Config) AgentToken(role amp.Role, name string) (string, error) {
	for _, t := range c.Auth.Tokens {
		if t.Name != name {
			continue
		}
		if t.Role != role {
			return "", fmt.Errorf("auth.tokens names %q with role %s; the %s's runs act under a token of role %s", name, t.Role, role, role)
		}
		return t.Token, nil
	}
	return "", fmt.Errorf("no auth.tokens entry is named %q", name)
}

// executable says why path is not an executable file named by an absolute
// path: a runner's hook runs it from any directory.
func executable(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%q is not an absolute path", path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
