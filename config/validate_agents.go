package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

func (c Config) validateCI(ps *problems) {
	ci := c.CI
	ps.oneOf("ci.provider", ci.Provider, ProviderNone, ProviderGitHub, ProviderCommand)
	ps.positive("ci.poll_interval", ci.PollInterval)
	ps.positive("ci.timeout", ci.Timeout)
	ps.url("ci.github.api_url", ci.GitHub.APIURL)
	if r := ci.GitHub.Repo; r != "" && !githubRepoRE.MatchString(r) {
		ps.add("ci.github.repo", "must be OWNER/NAME, e.g. ampflow/ampflow, not %q", r)
	}
	ps.positive("ci.command.timeout", ci.Command.Timeout)
	ps.envList("ci.command.env", ci.Command.Env)
	switch ci.Provider {
	case ProviderGitHub:
		ps.required("ci.github.token", ci.GitHub.Token, "ci.provider is github")
	case ProviderCommand:
		if len(ci.Command.Run) == 0 || ci.Command.Run[0] == "" {
			ps.add("ci.command.run", "required when ci.provider is command")
		} else {
			ps.argv("ci.command.run", ci.Command.Run)
		}
	}
}

func validateAgent(ps *problems, prefix string, a Agent) {
	ps.oneOf(prefix+".mode", a.Mode, AgentModePull, AgentModeCommand, AgentModeWebhook, AgentModeRunner)
	ps.positive(prefix+".timeout", a.Timeout)
	ps.envList(prefix+".env", a.Env)
	switch a.Mode {
	case AgentModeCommand:
		if len(a.Command) == 0 || a.Command[0] == "" {
			ps.add(prefix+".command", "required when %s.mode is command", prefix)
		} else {
			ps.argv(prefix+".command", a.Command)
		}
	case AgentModeWebhook:
		if a.WebhookURL == "" {
			ps.add(prefix+".webhook_url", "required when %s.mode is webhook", prefix)
		} else {
			ps.url(prefix+".webhook_url", a.WebhookURL)
			if what := SecretInURL(a.WebhookURL); what != "" {
				ps.add(prefix+".webhook_url", "must not carry a secret (%s): the URL is shown and logged; %s.webhook_secret signs each delivery", what, prefix)
			}
		}
		ps.required(prefix+".webhook_secret", a.WebhookSecret, prefix+".mode is webhook (it signs each delivery)")
	case AgentModeRunner:
		ps.oneOf(prefix+".runner", a.Runner, Runners...)
		if a.Runner == RunnerACP && (len(a.Command) == 0 || a.Command[0] == "") {
			ps.add(prefix+".command", "required when %s.runner is acp: the agent's ACP command line, e.g. [gemini, --acp]", prefix)
		} else if len(a.Command) > 0 {
			ps.argv(prefix+".command", a.Command)
		}
		ps.positive(prefix+".idle_timeout", a.IdleTimeout)
		if a.Sandbox != "" {
			ps.oneOf(prefix+".sandbox", a.Sandbox, SandboxOn, SandboxOff)
		}
		if a.MaxCostUSD < 0 {
			ps.add(prefix+".max_cost_usd", "must not be negative (0: no cap), not %v", a.MaxCostUSD)
		}
	}
	if len(a.Accounts) > 0 && a.Mode != AgentModeRunner {
		ps.add(prefix+".accounts", "only a runner has accounts (%s.mode is %s, not runner)", prefix, a.Mode)
	}
	validateAccounts(ps, prefix+".accounts", a.Accounts)
}

// AccountNameRE is what an account's name may be: it is a metrics label
// and shown in the fleet view.
var AccountNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,39}$`)

// secretVarRE is a variable name that holds a key, whose value an account
// must take from the worker's environment.
var secretVarRE = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION)`)

func validateAccounts(ps *problems, key string, accounts []Account) {
	seen := map[string]bool{}
	for i, acc := range accounts {
		k := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case !AccountNameRE.MatchString(acc.Name):
			ps.add(k+".name", "must be 1 to 40 of a-z, 0-9, _, . and - (starting with a letter or digit), not %q", acc.Name)
		case seen[acc.Name]:
			ps.add(k+".name", "%q is listed twice", acc.Name)
		}
		seen[acc.Name] = true
		if len(acc.Env) == 0 {
			ps.add(k+".env", "must set at least one variable, e.g. [ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY_%s]", strings.ToUpper(acc.Name))
		}
		for j, e := range acc.Env {
			ek := fmt.Sprintf("%s.env[%d]", k, j)
			name, value, ok := strings.Cut(e, "=")
			source, fromEnv := strings.CutPrefix(value, "$")
			switch {
			case !ok || !envName.MatchString(name):
				ps.add(ek, "must be NAME=$SOURCE (the worker's variable SOURCE) or NAME=value, not %q", e)
			case strings.HasPrefix(name, EnvPrefix):
				ps.add(ek, "must not set ampflow's own %s", name)
			case fromEnv && !envName.MatchString(source):
				ps.add(ek, "must name a variable after $ (A-Z, 0-9, _), not %q", source)
			case fromEnv && strings.HasPrefix(source, EnvPrefix):
				ps.add(ek, "must not pass ampflow's own %s to a run", source)
			case !fromEnv && secretVarRE.MatchString(name):
				ps.add(ek, "sets the secret %s in clear: write %s=$SOURCE and give the key in the worker's variable SOURCE", name, name)
			}
		}
	}
}

// argv refuses a command written as one shell line: ampflow runs argv
// without a shell, so "python3 agent.py" would look for a program of
// that name. A single word naming an existing file with a space in its
// path is left alone.
func (ps *problems) argv(key string, argv []string) {
	if len(argv) == 0 || !strings.ContainsAny(argv[0], " \t") {
		return
	}
	if _, err := os.Stat(argv[0]); err == nil {
		return
	}
	words := append(strings.Fields(argv[0]), argv[1:]...)
	what := "is one string"
	if len(argv) > 1 {
		key += "[0]"
		what = "starts with"
	}
	ps.add(key, "%s %q, which ampflow would run as a single program name (there is no shell); write a list: [%s] (from the environment: %s)",
		what, argv[0], strings.Join(words, ", "), strings.Join(words, ","))
}

// envList checks a list of environment variable names, each optionally
// with =value.
func (ps *problems) envList(key string, env []string) {
	for i, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if !envName.MatchString(name) {
			ps.add(fmt.Sprintf("%s[%d]", key, i), "must be a variable name (A-Z, 0-9, _) or NAME=value, not %q", e)
		}
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
