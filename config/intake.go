package config

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
)

// Intake turns the items of trackers into tasks (docs/intake.md).
type Intake struct {
	GitHub IntakeGitHub `mapstructure:"github"`
}

// IntakeGitHub makes a task of each GitHub issue that gets Label or is
// assigned to Assignee, in the repositories of Repos, and comments the
// task's progress on the issue.
type IntakeGitHub struct {
	// APIURL is the REST API's base: https://api.github.com/, or
	// https://HOST/api/v3/ for GitHub Enterprise.
	APIURL string `mapstructure:"api_url"`
	// TokenEnv names the environment variable holding the token that
	// reads the issues and comments on them; never the token itself.
	TokenEnv string `mapstructure:"token_env"`
	// Label and Assignee pick the issues: either one is enough.
	Label    string `mapstructure:"label"`
	Assignee string `mapstructure:"assignee"`
	// PollInterval is how often each repository's issues are read (with
	// ETags) and the tasks' progress is commented.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// WebhookSecretEnv names the environment variable holding the secret
	// of GitHub's issue deliveries on POST /v1/github/webhook; empty takes
	// none (polling alone).
	WebhookSecretEnv string `mapstructure:"webhook_secret_env"`
	// Risk is the risk level of an issue's task unless a label says
	// risk:low, risk:medium or risk:high.
	Risk string `mapstructure:"risk"`
	// CloseOnMerge closes the issue when its task's pull request merges.
	CloseOnMerge bool `mapstructure:"close_on_merge"`
	// Repos map GitHub repositories to where their tasks run.
	Repos []IntakeRepo `mapstructure:"repos"`
}

// IntakeRepo is a GitHub repository (Name, OWNER/NAME) and the local
// repository its tasks run in (Repo, an absolute path or a URL).
type IntakeRepo struct {
	Name string `mapstructure:"name" json:"name"`
	Repo string `mapstructure:"repo" json:"repo"`
}

// On reports whether the GitHub intake is configured.
func (g IntakeGitHub) On() bool { return len(g.Repos) > 0 }

// Token is the intake's token, from the variable TokenEnv names.
func (g IntakeGitHub) Token() string {
	if g.TokenEnv == "" {
		return ""
	}
	return os.Getenv(g.TokenEnv)
}

// WebhookSecret is the issue deliveries' secret, from the variable
// WebhookSecretEnv names; empty when none.
func (g IntakeGitHub) WebhookSecret() string {
	if g.WebhookSecretEnv == "" {
		return ""
	}
	return os.Getenv(g.WebhookSecretEnv)
}

var intakeDefaults = map[string]any{
	"intake.github.api_url":            "https://api.github.com/",
	"intake.github.token_env":          "GITHUB_TOKEN",
	"intake.github.label":              "ampflow",
	"intake.github.assignee":           "",
	"intake.github.poll_interval":      30 * time.Second,
	"intake.github.webhook_secret_env": "",
	"intake.github.risk":               string(amp.RiskLow),
	"intake.github.close_on_merge":     true,
	"intake.github.repos":              []IntakeRepo{},
}

func init() {
	for k, v := range intakeDefaults {
		defaults[k] = v
	}
	jsonListTypes[reflect.TypeOf([]IntakeRepo{})] = true
}

func (c Config) validateIntake(ps *problems) {
	g := c.Intake.GitHub
	if !g.On() {
		return
	}
	ps.url("intake.github.api_url", g.APIURL)
	ps.positive("intake.github.poll_interval", g.PollInterval)
	ps.oneOf("intake.github.risk", g.Risk, string(amp.RiskLow), string(amp.RiskMedium), string(amp.RiskHigh))
	if g.Label == "" && g.Assignee == "" {
		ps.add("intake.github.label", "or intake.github.assignee is required: they pick the issues that become tasks")
	}
	for _, k := range []struct{ key, val string }{{"intake.github.token_env", g.TokenEnv}, {"intake.github.webhook_secret_env", g.WebhookSecretEnv}} {
		if k.val != "" && !envNameRE.MatchString(k.val) {
			ps.add(k.key, "must be the name of an environment variable, not %q", k.val)
		}
	}
	ps.required("intake.github.token_env", g.TokenEnv, "intake.github.repos are listed")
	seen := map[string]bool{}
	for i, r := range g.Repos {
		k := fmt.Sprintf("intake.github.repos[%d]", i)
		switch {
		case !githubRepoRE.MatchString(r.Name):
			ps.add(k+".name", "must be OWNER/NAME, not %q", r.Name)
		case seen[strings.ToLower(r.Name)]:
			ps.add(k+".name", "%q is listed twice", r.Name)
		}
		seen[strings.ToLower(r.Name)] = true
		if !amp.ValidRepo(r.Repo) {
			ps.add(k+".repo", "must be the absolute path of a local repository or its URL (file, https, http, ssh, git, user@host:path), not %q", r.Repo)
		}
	}
}
