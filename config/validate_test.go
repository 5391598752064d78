package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"time"
)

func defaultConfig(t *testing.T) Config {
	t.Helper()
	c, err := LoadEnv(New(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   []string // "key: reason" prefixes, in order
	}{
		{"Defaults", func(*Config) {}, nil},
		{"LogLevel", func(c *Config) { c.Log.Level = "loud" }, []string{"log.level: must be debug, info, warn or error"}},
		{"LogFormat", func(c *Config) { c.Log.Format = "xml" }, []string{"log.format: must be text or json"}},
		{"TemporalAddress", func(c *Config) { c.Temporal.Address = "localhost" }, []string{"temporal.address: must be host:port"}},
		{"TLSHalfPair", func(c *Config) { c.Temporal.TLS.CertFile = "c.pem" }, []string{"temporal.tls.key_file: required when temporal.tls.cert_file is set"}},
		{"WorkflowCacheNone", func(c *Config) { c.Temporal.WorkflowCache = 0 }, []string{"temporal.workflow_cache: must be 1 to 1000000 workflows, not 0"}},
		{"DevPort", func(c *Config) { c.Dev.UIPort = 70000 }, []string{"dev.ui_port: must be a port"}},
		{"DevPortsZero", func(c *Config) { c.Dev.UIPort, c.Dev.TemporalPort = 0, 0 }, nil},
		{"SamePorts", func(c *Config) { c.Dev.UIPort = c.Dev.TemporalPort }, []string{"dev.ui_port: must differ"}},
		{"TemporalIP", func(c *Config) { c.Dev.TemporalIP = "localhost" }, []string{"dev.temporal_ip: must be an IP address"}},
		{"TemporalDB", func(c *Config) { c.Dev.TemporalDB = "mysql://u@h/db" }, []string{"dev.temporal_db: must be a postgres:// URL"}},
		{"TemporalDBPostgres", func(c *Config) { c.Dev.TemporalDB = "postgres://u:p@h:5432/temporal?sslmode=disable" }, nil},
		{"HostTimeoutShort", func(c *Config) { c.Runner.HostTimeout = time.Second }, []string{"runner.host_timeout: must be at least 5s"}},
		{"HostTimeoutDefault", func(c *Config) { c.Runner.HostTimeout = 0 }, nil},
		{"HTTPAddr", func(c *Config) { c.HTTP.Addr = "" }, []string{"http.addr: must be host:port"}},
		{"HTTPRate", func(c *Config) { c.HTTP.Rate = 0 }, []string{"http.rate: must be more than 0"}},
		{"APIURL", func(c *Config) { c.API.URL = "127.0.0.1:7480" }, []string{"api.url: must"}},
		{"APIURLScheme", func(c *Config) { c.API.URL = "ftp://127.0.0.1:7480" }, []string{"api.url: must start with http:// or https://"}},
		{"APIToken", func(c *Config) { c.API.Token = "two words" }, []string{"api.token: must not contain spaces"}},
		{"TokenRole", func(c *Config) { c.Auth.Tokens = []AuthToken{{Token: "t-0123456789abcdef", Role: "root", Name: "ops"}} }, []string{"auth.tokens[0].role: must be coordinator, executor, reviewer or admin"}},
		{"TokenRepeated", func(c *Config) {
			c.Auth.Tokens = []AuthToken{{Token: "t-0123456789abcdef", Role: "admin", Name: "ops"}, {Token: "t-0123456789abcdef", Role: "executor", Name: "codex"}}
		}, []string{"auth.tokens[1].token: repeats"}},
		{"TokenEmpty", func(c *Config) { c.Auth.Tokens = []AuthToken{{Role: "admin", Name: "ops"}} }, []string{"auth.tokens[0].token: must not be empty"}},
		{"TokenShort", func(c *Config) { c.Auth.Tokens = []AuthToken{{Token: "0123456789abcde", Role: "admin", Name: "ops"}} }, []string{"auth.tokens[0].token: is 15 characters, at least 16"}},
		{"TokenNameMissing", func(c *Config) {
			c.Auth.Tokens = []AuthToken{{Token: "t1-0123456789abcdef", Role: "admin", Name: "ops"}, {Token: "t2-0123456789abcdef", Role: "admin", Name: " "}}
		}, []string{"auth.tokens[1].name: required"}},
		{"TokenNameRepeated", func(c *Config) {
			c.Auth.Tokens = []AuthToken{{Token: "t1-0123456789abcdef", Role: "executor", Name: "ops"}, {Token: "t2-0123456789abcdef", Role: "admin", Name: "ops"}}
		}, []string{`auth.tokens[1].name: "ops" is the name of auth.tokens[0] too`}},
		{"TokenIDRepeated", func(c *Config) {
			c.Auth.Tokens = []AuthToken{{Token: "t1-0123456789abcdef", Role: "executor", Name: "codex", ID: "u-1"}, {Token: "t2-0123456789abcdef", Role: "reviewer", Name: "claude", ID: "u-1"}}
		}, []string{`auth.tokens[1].id: "u-1" is the id of auth.tokens[0] too`}},
		{"TokenIDAnothersName", func(c *Config) {
			c.Auth.Tokens = []AuthToken{{Token: "t1-0123456789abcdef", Role: "executor", Name: "codex"}, {Token: "t2-0123456789abcdef", Role: "reviewer", Name: "claude", ID: "codex"}}
		}, []string{`auth.tokens[1].id: "codex" is the name of auth.tokens[0]`}},
		{"TokenIDs", func(c *Config) {
			c.Auth.Tokens = []AuthToken{{Token: "t1-0123456789abcdef", Role: "executor", Name: "codex", ID: "codex"}, {Token: "t2-0123456789abcdef", Role: "reviewer", Name: "claude", ID: "u-2"}}
		}, nil},
		{"TokenNameWildcard", func(c *Config) { c.Auth.Tokens = []AuthToken{{Token: "t1-0123456789abcdef", Role: "admin", Name: "*"}} }, []string{`auth.tokens[0].name: must not be "*"`}},
		{"TokensNamed", func(c *Config) {
			c.Auth.Tokens = []AuthToken{{Token: "t1-0123456789abcdef", Role: "admin", Name: "ops"}, {Token: "t2-0123456789abcdef", Role: "executor", Name: "codex"}}
			c.Admins = AdminsNamed(task.AnyAdmin)
		}, nil},
		{"SSOTURLPostgres", func(c *Config) { c.SSOT.URL = "postgres://u:pw@db:5432/ampflow" }, nil},
		{"SSOTURLSQLite", func(c *Config) { c.SSOT.URL = "sqlite:///var/lib/ampflow/ampflow.db" }, nil},
		{"SSOTURLNoHost", func(c *Config) { c.SSOT.URL = "postgres:///ampflow" }, []string{"ssot.url: must name the PostgreSQL host"}},
		{"SSOTURLScheme", func(c *Config) { c.SSOT.URL = "mysql://u:pw@db/ampflow" }, []string{"ssot.url: must be a SQLite file path, sqlite://PATH or a postgres:// URL"}},
		{"SSOTURLEmpty", func(c *Config) { c.SSOT.URL = "" }, []string{"ssot.url: is required"}},
		{"AckTimeout", func(c *Config) { c.Protocol.AckTimeout.ReviewRequest = 0 }, []string{"protocol.ack_timeout.review_request: must be a positive duration"}},
		{"Heartbeat", func(c *Config) { c.Protocol.HeartbeatTimeout = -1 }, []string{"protocol.heartbeat_timeout: must be a positive duration"}},
		{"MaxRejects", func(c *Config) { c.Protocol.MaxRejects = 0 }, []string{"protocol.max_rejects: must be ≥ 1"}},
		{"MaxCIRounds", func(c *Config) { c.Protocol.MaxCIRounds = -2 }, []string{"protocol.max_ci_rounds: must be ≥ 1"}},
		{"MinConfidence", func(c *Config) { c.Protocol.MinConfidence = 1.5 }, []string{"protocol.min_confidence: must be between 0 and 1"}},
		{"QuorumZero", func(c *Config) { c.Policy.Quorum.Low = 0 }, []string{"policy.quorum.low: must be ≥ 1"}},
		{"QuorumUnreachable", func(c *Config) {
			c.Admins = AdminsNamed("ana")
			c.Slack.Admins = []string{"U1"}
			c.Policy.Quorum.High = 3
		}, []string{"policy.quorum.high: 3 approvals can never be given: only 2 admins"}},
		{"QuorumReachable", func(c *Config) {
			c.Admins = AdminsNamed("ana")
			c.Auth.Tokens = []AuthToken{{Token: "t1-0123456789abcdef", Role: "admin", Name: "ops"}}
			c.Policy.Quorum.High = 2
		}, nil},
		{"QuorumAnyAdmin", func(c *Config) { c.Admins = AdminsNamed(task.AnyAdmin); c.Policy.Quorum.Medium = 5 }, nil},
		{"DecisionsNegative", func(c *Config) { c.Policy.Decisions.RemindAfter = -time.Second }, []string{"policy.decisions.remind_after: must be ≥ 0"}},
		{"EscalateAfterExpire", func(c *Config) {
			c.Policy.Decisions.EscalateAfter, c.Policy.Decisions.ExpireAfter = 5*time.Hour, 2*time.Hour
		}, []string{"policy.decisions.escalate_after: must not be after policy.decisions.expire_after"}},
		{"NeverExpire", func(c *Config) { c.Policy.Decisions.ExpireAfter = 0 }, nil},
		{"DeliveryPullRequest", func(c *Config) { c.Delivery.PullRequest = "yes" }, []string{"delivery.pull_request: must be off, draft or ready"}},
		{"DeliveryMerge", func(c *Config) { c.Delivery.Merge = "ff" }, []string{"delivery.merge: must be off, squash, merge or rebase"}},
		{"DeliveryPRNeedsPush", func(c *Config) { c.Delivery.PullRequest, c.Delivery.GitHub.TokenEnv = PullDraft, "GITHUB_TOKEN" }, []string{"delivery.pull_request: needs delivery.push"}},
		{"DeliveryPRNeedsToken", func(c *Config) { c.Delivery.Push, c.Delivery.PullRequest = true, PullReady }, []string{"delivery.github.token_env: required"}},
		{"DeliveryMergeNeedsPR", func(c *Config) { c.Delivery.Push, c.Delivery.Merge = true, MergeSquash }, []string{"delivery.merge: needs delivery.pull_request"}},
		{"DeliveryTokenEnvName", func(c *Config) { c.Delivery.GitHub.TokenEnv = "ghp_abc-def" }, []string{"delivery.github.token_env: must be the name"}},
		{"DeliveryPollZero", func(c *Config) { c.Delivery.GitHub.Poll = 0 }, []string{"delivery.github.poll: must be"}},
		{"DeliveryAll", func(c *Config) {
			c.Delivery = Delivery{Push: true, PullRequest: PullDraft, Merge: MergeSquash,
				GitHub: DeliveryGitHub{TokenEnv: "GITHUB_TOKEN", Reviewers: []string{"alice"}, Approvals: 1, Poll: time.Minute}}
		}, nil},
		{"LeaseWaitZero", func(c *Config) { c.Policy.LeaseWait = 0 }, []string{"policy.lease_wait: must be"}},
		{"Policy", func(c *Config) { c.Policy.PlanApproval.High = "maybe" }, []string{"policy.plan_approval.high: must be auto or admin"}},
		{"CIProvider", func(c *Config) { c.CI.Provider = "jenkins" }, []string{"ci.provider: must be none, github or command"}},
		{"GitHubToken", func(c *Config) { c.CI.Provider = ProviderGitHub }, []string{"ci.github.token: required when ci.provider is github"}},
		{"CICommand", func(c *Config) { c.CI.Provider = ProviderCommand }, []string{"ci.command.run: required when ci.provider is command"}},
		{"CIPoll", func(c *Config) { c.CI.PollInterval = 0 }, []string{"ci.poll_interval: must be a positive duration"}},
		{"GitHubURL", func(c *Config) { c.CI.GitHub.APIURL = "api.github.com" }, []string{"ci.github.api_url: must be an http or https URL"}},
		{"GitHubRepo", func(c *Config) { c.CI.GitHub.Repo = "https://github.com/o/r" }, []string{"ci.github.repo: must be OWNER/NAME"}},
		{"SSOTPush", func(c *Config) { c.SSOT.Git.Push = true; c.SSOT.Git.Remote = "" }, []string{
			"ssot.git.commit: must be true when ssot.git.push is true",
			"ssot.git.remote: required when ssot.git.push is true",
		}},
		{"AgentMode", func(c *Config) { c.Agents.Executor.Mode = "carrier-pigeon" }, []string{"agents.executor.mode: must be pull, command, webhook or runner"}},
		{"RunnerACPNoCommand", func(c *Config) {
			c.Agents.Executor.Mode, c.Agents.Executor.Runner = AgentModeRunner, RunnerACP
		}, []string{"agents.executor.command: required when agents.executor.runner is acp"}},
		{"RunnerACPShellLine", func(c *Config) {
			c.Agents.Executor.Mode, c.Agents.Executor.Runner, c.Agents.Executor.Command = AgentModeRunner, RunnerACP, []string{"gemini --acp"}
		}, []string{`agents.executor.command: is one string "gemini --acp"`}},
		{"RunnerACP", func(c *Config) {
			c.Agents.Executor.Mode, c.Agents.Executor.Runner, c.Agents.Executor.Command = AgentModeRunner, RunnerACP, []string{"opencode", "acp"}
		}, nil},
		{"AgentCommand", func(c *Config) { c.Agents.Executor.Mode = AgentModeCommand }, []string{"agents.executor.command: required when agents.executor.mode is command"}},
		{"AgentWebhook", func(c *Config) { c.Agents.Reviewer.Mode = AgentModeWebhook }, []string{
			"agents.reviewer.webhook_url: required when agents.reviewer.mode is webhook",
			"agents.reviewer.webhook_secret: required when agents.reviewer.mode is webhook",
		}},
		{"AgentWebhookURL", func(c *Config) {
			c.Agents.Reviewer.Mode = AgentModeWebhook
			c.Agents.Reviewer.WebhookURL = "ftp://x"
			c.Agents.Reviewer.WebhookSecret = "s"
		}, []string{"agents.reviewer.webhook_url: must be an http or https URL"}},
		{"AgentWebhookURLSecret", func(c *Config) {
			c.Agents.Reviewer.Mode = AgentModeWebhook
			c.Agents.Reviewer.WebhookURL = "https://hooks.example/amp?api_key=abc"
			c.Agents.Reviewer.WebhookSecret = "s"
		}, []string{"agents.reviewer.webhook_url: must not carry a secret (the query parameter api_key)"}},
		{"AgentCommandShellLine", func(c *Config) {
			c.Agents.Executor.Mode = AgentModeCommand
			c.Agents.Executor.Command = []string{"python3 agent.py"}
		}, []string{`agents.executor.command: is one string "python3 agent.py", which ampflow would run as a single program name (there is no shell); write a list: [python3, agent.py]`}},
		{"AgentCommandShellLineWithArgs", func(c *Config) {
			c.Agents.Executor.Mode = AgentModeCommand
			c.Agents.Executor.Command = []string{"python3 agent.py", "--x"}
		}, []string{`agents.executor.command[0]: starts with "python3 agent.py", which ampflow would run as a single program name (there is no shell); write a list: [python3, agent.py, --x]`}},
		{"AgentCommandList", func(c *Config) {
			c.Agents.Executor.Mode = AgentModeCommand
			c.Agents.Executor.Command = []string{"python3", "agent.py --fast"}
		}, nil},
		{"CICommandShellLine", func(c *Config) {
			c.CI.Provider = ProviderCommand
			c.CI.Command.Run = []string{"go test ./..."}
		}, []string{"ci.command.run: is one string \"go test ./...\""}},
		{"AgentEnv", func(c *Config) { c.Agents.Reviewer.Env = []string{"OPENAI_API_KEY", "MODE=fast", "BAD-NAME"} }, []string{
			"agents.reviewer.env[2]: must be a variable name",
		}},
		{"CIEnv", func(c *Config) { c.CI.Command.Env = []string{"=x"} }, []string{"ci.command.env[0]: must be a variable name"}},
		// Code ampflow runs gets none of ampflow's credentials.
		{"ChildEnvNoAmpflowSecrets", func(c *Config) {
			c.Gate.Agents = []GateAgent{{ID: "deployer", KeyEnv: "DEPLOYER_KEY"}}
			c.Agents.Executor.Env = []string{"AMPFLOW_AUTH_TOKENS", "AMPFLOW_API_URL=http://127.0.0.1:7480"}
			c.Agents.Reviewer.Env = []string{"DEPLOYER_KEY"}
			c.CI.Command.Env = []string{"AMPFLOW_AUTH_DECISION_KEY"}
		}, []string{
			`agents.executor.env[0]: must not pass the worker's own AMPFLOW_* settings to code ampflow runs, not "AMPFLOW_AUTH_TOKENS"`,
			`agents.reviewer.env[0]: must not pass "DEPLOYER_KEY", which holds gate agent deployer's key`,
			`ci.command.env[0]: must not pass the worker's own AMPFLOW_* settings`,
		}},
		{"SlackSocket", func(c *Config) { c.Slack.Enabled = true }, []string{
			"slack.bot_token: required when slack.enabled is true",
			"slack.channel: required when slack.enabled is true",
			"slack.app_token: required when slack.mode is socket",
		}},
		{"SlackHTTP", func(c *Config) {
			c.Slack = Slack{Enabled: true, Mode: "http", BotToken: "b", Channel: "C1", APIURL: "https://slack.com/api/"}
		}, []string{"slack.signing_secret: required when slack.mode is http"}},
		{"SlackModeWhileDisabled", func(c *Config) { c.Slack.Mode = "rtm" }, []string{"slack.mode: must be socket or http"}},
		{"Telegram", func(c *Config) { c.Telegram.Enabled = true; c.Telegram.Mode = "webhook" }, []string{
			"telegram.token: required when telegram.enabled is true",
			"telegram.chat_id: required when telegram.enabled is true",
			"telegram.webhook_secret: required when telegram.mode is webhook",
		}},
		{"EnabledAndComplete", func(c *Config) {
			c.Telegram.Enabled, c.Telegram.Token, c.Telegram.ChatID = true, "tok", "-100"
			c.CI.Provider, c.CI.GitHub.Token = ProviderGitHub, "ghp"
		}, nil},
		{"ManyAtOnce", func(c *Config) {
			c.Protocol.MaxRejects = 0
			c.Log.Format = "xml"
			c.CI.Provider = ProviderGitHub
		}, []string{"log.format:", "protocol.max_rejects:", "ci.github.token:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig(t)
			tt.change(&c)
			err := c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v, want a *ValidationError", err)
			}
			if len(ve.Problems) != len(tt.want) {
				t.Fatalf("problems = %q, want %d: %q", ve.Problems, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if got := ve.Problems[i].String(); !strings.HasPrefix(got, w) {
					t.Errorf("problem %d = %q, want prefix %q", i, got, w)
				}
			}
			if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), ve.Problems[0].Path) {
				t.Errorf("Error() = %q, want one line naming the key", err)
			}
		})
	}
}

func TestSecretsRedacted(t *testing.T) {
	c := defaultConfig(t)
	secrets := map[string]*string{
		"temporal.api_key":               &c.Temporal.APIKey,
		"api.token":                      &c.API.Token,
		"ci.github.token":                &c.CI.GitHub.Token,
		"slack.app_token":                &c.Slack.AppToken,
		"slack.bot_token":                &c.Slack.BotToken,
		"slack.signing_secret":           &c.Slack.SigningSecret,
		"telegram.token":                 &c.Telegram.Token,
		"telegram.webhook_secret":        &c.Telegram.WebhookSecret,
		"agents.executor.webhook_secret": &c.Agents.Executor.WebhookSecret,
		"agents.reviewer.webhook_secret": &c.Agents.Reviewer.WebhookSecret,
		"delivery.github.webhook_secret": &c.Delivery.GitHub.WebhookSecret,
	}
	for key, p := range secrets {
		*p = "SECRET-" + key
	}
	c.Auth.Tokens = []AuthToken{{Token: "SECRET-auth", Role: amp.RoleAdmin, Name: "ops"}}
	c.SSOT.URL = "postgres://ampflow:SECRET-ssot@db.example:5432/ampflow"
	c.Dev.TemporalDB = "postgres://temporal:SECRET-db@db:5432/temporal"
	if !slices.Contains(c.Secrets(), "SECRET-db") {
		t.Errorf("Secrets() %v lacks the password of dev.temporal_db", c.Secrets())
	}

	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", c)
	outputs := map[string]string{
		"String":    c.String(),
		"Sprint":    fmt.Sprint(c),
		"Sprintf%v": fmt.Sprintf("%v", c),
		"Redacted":  fmt.Sprintf("%+v", c.Redacted().Settings()),
		"slog":      logged.String(),
	}
	for name, out := range outputs {
		if strings.Contains(out, "SECRET") {
			t.Errorf("%s shows a secret: %s", name, out)
		}
		if !strings.Contains(out, Mask) || !strings.Contains(out, "ops") {
			t.Errorf("%s lacks the mask or the token's name: %s", name, out)
		}
	}
	if !strings.Contains(c.String(), "telegram.token="+Mask+"\n") {
		t.Errorf("String() does not mask telegram.token:\n%s", c)
	}
	if c.Telegram.Token != "SECRET-telegram.token" || c.Auth.Tokens[0].Token != "SECRET-auth" {
		t.Error("Redacted changed the original")
	}
	listed := c.Secrets()
	for key, p := range secrets {
		if !slices.Contains(listed, *p) {
			t.Errorf("Secrets() lacks %s", key)
		}
	}
	if !slices.Contains(listed, "SECRET-auth") {
		t.Error("Secrets() lacks the auth token")
	}
	if !slices.Contains(listed, "SECRET-ssot") {
		t.Error("Secrets() lacks the password in ssot.url")
	}
	if got := c.Redacted().SSOT.URL; got != "postgres://ampflow:xxxxx@db.example:5432/ampflow" {
		t.Errorf("ssot.url redacted reads %q", got)
	}
	if got := defaultConfig(t).Redacted().Telegram.Token; got != "" {
		t.Errorf("an unset secret reads %q, want empty", got)
	}
}

// A ssot.url the URL parser refuses is reported without its password.
func TestSSOTURLErrorHidesPassword(t *testing.T) {
	c := defaultConfig(t)
	c.SSOT.URL = "postgres://ampflow:s3cr%t@db:5432/ampflow"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "ssot.url") {
		t.Fatalf("Validate = %v, want a problem with ssot.url", err)
	}
	if strings.Contains(err.Error(), "s3cr") {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestDashboardValidation(t *testing.T) {
	c := Default()
	c.Dashboard.PollInterval = 10 * time.Millisecond
	c.Dashboard.SessionTTL = 0
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "dashboard.poll_interval: must be at least 50ms") || !strings.Contains(err.Error(), "dashboard.session_ttl: must be a positive duration") {
		t.Fatalf("Validate: %v", err)
	}
}

// TestSecretsFromEnvironment checks that the secrets read from the
// environment when used (agents' keys, the contract secret) are scrubbed
// like the rest.
func TestSecretsFromEnvironment(t *testing.T) {
	c := defaultConfig(t)
	t.Setenv("AMPFLOW_TEST_AGENT_KEY", "SECRET-agent-key")
	t.Setenv("AMPFLOW_TEST_CONTRACT_KEY", "SECRET-contract-key")
	c.Gate.Agents = []GateAgent{{ID: "deployer", KeyEnv: "AMPFLOW_TEST_AGENT_KEY"}}
	c.Gate.Contracts.ContractSecretEnv = "AMPFLOW_TEST_CONTRACT_KEY"
	for _, want := range []string{"SECRET-agent-key", "SECRET-contract-key"} {
		if !slices.Contains(c.Secrets(), want) {
			t.Errorf("Secrets() lacks %s", want)
		}
	}
}
