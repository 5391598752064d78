// Package config is ampflow's typed configuration: defaults for every key,
// then a YAML file, then AMPFLOW_* environment variables, then command-line
// flags, all on one viper instance, decoded into Config and validated.
package config

import (
	"log/slog"
	"slices"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// Config is the whole of ampflow's configuration. The mapstructure tags are
// the configuration keys; a nested struct is a dotted prefix.
type Config struct {
	// File is the configuration file read, "" when none was; set by
	// LoadEnv, not a key.
	File string `mapstructure:"-"`
	// DataDir holds local state: the SSOT by default, the dev server's database.
	DataDir  string   `mapstructure:"data_dir"`
	Log      Log      `mapstructure:"log"`
	Temporal Temporal `mapstructure:"temporal"`
	Dev      Dev      `mapstructure:"dev"`
	HTTP     HTTP     `mapstructure:"http"`
	API      API      `mapstructure:"api"`
	Auth     Auth     `mapstructure:"auth"`
	// Admins names the people who may decide from the CLI or the HTTP API.
	// AnyAdmin among them lets anyone named decide; none at all (here, in
	// the chat admins or as admin tokens) lets nobody. An entry is a name
	// or {name, slack, telegram}: the person's channel identities too,
	// which then decide as that person and count once in a quorum.
	Admins []Admin `mapstructure:"admins"`
	// AdminsEscalation names the people who may also decide a decision
	// once it has escalated (policy.decisions.escalate_after passed).
	AdminsEscalation []string  `mapstructure:"admins_escalation"`
	Protocol         Protocol  `mapstructure:"protocol"`
	Policy           Policy    `mapstructure:"policy"`
	CI               CI        `mapstructure:"ci"`
	Delivery         Delivery  `mapstructure:"delivery"`
	SSOT             SSOT      `mapstructure:"ssot"`
	Agents           Agents    `mapstructure:"agents"`
	Slack            Slack     `mapstructure:"slack"`
	Telegram         Telegram  `mapstructure:"telegram"`
	Notify           Notify    `mapstructure:"notify"`
	Gate             Gate      `mapstructure:"gate"`
	Pricing          Pricing   `mapstructure:"pricing"`
	Dashboard        Dashboard `mapstructure:"dashboard"`
	AOF              AOF       `mapstructure:"aof"`
	Tools            Tools     `mapstructure:"tools"`
	Sandbox          Sandbox   `mapstructure:"sandbox"`
	Intake           Intake    `mapstructure:"intake"`
	Runner           Runner    `mapstructure:"runner"`
	Goals            Goals     `mapstructure:"goals"`
}

// Sandbox configures what sandboxed runs reach (docs/sandbox.md).
type Sandbox struct {
	Network SandboxNetwork `mapstructure:"network"`
}

// SandboxNetwork is a sandboxed run's network: it reaches ampflow's API,
// the loopback endpoints its agents.<role>.env names (a model API served
// on loopback), and, through the worker's egress proxy, its runner's
// model API host and the hosts of Allow; nothing else.
type SandboxNetwork struct {
	// Allow are the hosts the proxy lets a run reach besides its model
	// API: "registry.npmjs.org", "*.pypi.org" (any subdomain), each with
	// an optional ":port" (default any port).
	Allow []string `mapstructure:"allow"`
}

// Log configures ampflow's own logs.
type Log struct {
	Level  string `mapstructure:"level"`  // debug, info, warn or error
	Format string `mapstructure:"format"` // text or json
}

// SlogLevel returns Level as a slog.Level; an unknown level reads as info.
func (l Log) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// HTTP configures ampflow's HTTP API.
type HTTP struct {
	Addr string `mapstructure:"addr"`
	// Rate is the writing requests (POST, PUT, PATCH, DELETE) one token
	// may make a minute on every route; beyond it 429 with Retry-After.
	Rate int `mapstructure:"rate"`
}

// API is how the CLI reaches ampflow's HTTP API, its only way in.
type API struct {
	// URL is the API's base URL, such as http://127.0.0.1:7480.
	URL string `mapstructure:"url"`
	// Token is the bearer token the CLI presents; its role decides what
	// the CLI may do and its name is who the CLI acts as. Secret.
	Token string `mapstructure:"token"`
}

// Auth lists the bearer tokens the HTTP API accepts, and the key that
// binds admins' answers to the channels that took them.
type Auth struct {
	Tokens []AuthToken `mapstructure:"tokens"`
	// DecisionKey signs every answer to a decision where ampflow takes it
	// (API, chat, dashboard) and lets the workflows check it: hex or
	// base64 of at least 32 random bytes, the same in every worker.
	// Secret: set it from AMPFLOW_AUTH_DECISION_KEY or keep it in
	// DecisionKeyFile.
	DecisionKey string `mapstructure:"decision_key"`
	// DecisionKeyFile holds the decision key when DecisionKey is empty.
	DecisionKeyFile string `mapstructure:"decision_key_file"`
}

// AuthToken is one bearer token, the role it may act as and the name it acts
// under: the by of its decisions, cancels and replans, unique and required.
// ID, optional, is the agent's id in the mesh besides its name (a UUID,
// as the RepoMesh protocol's from_id): messages to either reach its
// inbox, and it may speak as either. Unique among the tokens' ids and
// names. From the environment a list of them reads
// "token:role:name,token:role:name#id".
type AuthToken struct {
	Token string   `mapstructure:"token"` // secret
	Role  amp.Role `mapstructure:"role"`  // coordinator, executor, reviewer or admin
	Name  string   `mapstructure:"name"`
	ID    string   `mapstructure:"id"`
}

// Protocol holds the AMP/1.0 timing and loop limits.
type Protocol struct {
	AckTimeout       AckTimeouts   `mapstructure:"ack_timeout"`
	HeartbeatTimeout time.Duration `mapstructure:"heartbeat_timeout"`
	// MaxRejects is how many rejected verdicts lock a task for the admin.
	MaxRejects int `mapstructure:"max_rejects"`
	// MaxCIRounds is how many failed CI runs escalate a task.
	MaxCIRounds int `mapstructure:"max_ci_rounds"`
	// MinConfidence is the verdict confidence below which the admin is asked.
	MinConfidence float64 `mapstructure:"min_confidence"`
}

// AckTimeouts is how long a receiver has to ACK each message type.
type AckTimeouts struct {
	TaskDispatch  time.Duration `mapstructure:"task_dispatch"`
	TaskResult    time.Duration `mapstructure:"task_result"`
	ReviewRequest time.Duration `mapstructure:"review_request"`
	ReviewVerdict time.Duration `mapstructure:"review_verdict"`
}

// Policy says, per risk level, which approvals need an admin.
type Policy struct {
	PlanApproval  Approval `mapstructure:"plan_approval"`
	FinalApproval Approval `mapstructure:"final_approval"`
	// Quorum is how many distinct admins must approve a plan or a final
	// approval, per risk level.
	Quorum    Quorum    `mapstructure:"quorum"`
	Decisions Decisions `mapstructure:"decisions"`
	// LeaseWait bounds how long an approved task waits in awaiting_lease
	// for its branch, held by another task, before the admins are asked
	// whether it should keep waiting or end.
	LeaseWait time.Duration `mapstructure:"lease_wait"`
}

// Quorum is a number of approvals per risk level.
type Quorum struct {
	Low    int `mapstructure:"low"`
	Medium int `mapstructure:"medium"`
	High   int `mapstructure:"high"`
}

// Decisions says what happens to a decision nobody answers: a reminder
// on every channel, then the escalation group, then its on_expiry option.
// Zero turns a step off.
type Decisions struct {
	RemindAfter   time.Duration `mapstructure:"remind_after"`
	EscalateAfter time.Duration `mapstructure:"escalate_after"`
	ExpireAfter   time.Duration `mapstructure:"expire_after"`
}

// Approval is the handling of each risk level: the configuration's form
// of task.RiskHandling.
type Approval struct {
	Low    task.Handling `mapstructure:"low"`
	Medium task.Handling `mapstructure:"medium"`
	High   task.Handling `mapstructure:"high"`
}

// CI providers (ci.provider).
const (
	ProviderNone    = "none"
	ProviderGitHub  = "github"
	ProviderCommand = "command"
)

// CI configures how ampflow learns whether a branch passes CI.
type CI struct {
	Provider     string        `mapstructure:"provider"` // none, github or command
	PollInterval time.Duration `mapstructure:"poll_interval"`
	Timeout      time.Duration `mapstructure:"timeout"`
	GitHub       CIGitHub      `mapstructure:"github"`
	Command      CICommand     `mapstructure:"command"`
}

// CIGitHub reads check runs from GitHub.
type CIGitHub struct {
	Token  string `mapstructure:"token"` // secret
	APIURL string `mapstructure:"api_url"`
	// Repo is OWNER/NAME of the repository whose checks count; empty means
	// the origin remote of the task's repository, read when the task starts.
	Repo string `mapstructure:"repo"`
}

// CICommand runs a local command in the task's repository as its CI.
type CICommand struct {
	Run     []string      `mapstructure:"run"` // argv, not a shell line
	Timeout time.Duration `mapstructure:"timeout"`
	// Env names the worker's environment variables the command may see
	// beyond the base set; NAME=value sets one outright.
	Env []string `mapstructure:"env"`
}

// SSOT configures the single source of truth: the database that records
// every message, ACK, decision and task.
type SSOT struct {
	// URL is the SQL store: a SQLite file path or a postgres:// URL; Load
	// makes an empty URL DataDir/ampflow.db.
	URL string `mapstructure:"url"`
	// SweepInterval is how often one worker clears the open decisions and
	// inbox messages of workflows that ended without saying so.
	SweepInterval time.Duration `mapstructure:"sweep_interval"`
	Git           SSOTGit       `mapstructure:"git"`
}

// SSOTGit mirrors the SSOT into a git repository.
type SSOTGit struct {
	Commit bool   `mapstructure:"commit"`
	Push   bool   `mapstructure:"push"`
	Remote string `mapstructure:"remote"`
	// Dir is the work tree the store is exported to; Load makes an empty
	// Dir DataDir/ssot-git.
	Dir string `mapstructure:"dir"`
}

// Agents configures how ampflow reaches the executor and the reviewer.
type Agents struct {
	Executor Agent `mapstructure:"executor"`
	Reviewer Agent `mapstructure:"reviewer"`
}

// Agent modes (agents.*.mode).
const (
	AgentModePull    = "pull"    // the agent reads its inbox (CLI or HTTP API)
	AgentModeCommand = "command" // the worker runs the agent with the message on stdin
	AgentModeWebhook = "webhook" // the worker POSTs the message to the agent
	AgentModeRunner  = "runner"  // the worker runs a coding-agent CLI in a worktree of the task
)

// Runners are the coding-agent CLIs agents.*.runner names (docs/runners.md):
// the four native ones and RunnerACP.
var Runners = []string{"claude", "codex", "gemini", "opencode", RunnerACP}

// RunnerACP is any agent that speaks the Agent Client Protocol; its
// command (agents.*.command) is required: the agent's ACP command line.
const RunnerACP = "acp"

// Slack modes (slack.mode).
const (
	SlackModeSocket = "socket" // Socket Mode: the worker connects out to Slack
	SlackModeHTTP   = "http"   // Slack POSTs events to the worker's HTTP API
)

// Telegram modes (telegram.mode).
const (
	TelegramModePolling = "polling" // the worker long-polls getUpdates
	TelegramModeWebhook = "webhook" // Telegram POSTs updates to the worker
)

// Agent says how one agent receives its messages: it pulls them from the
// API, ampflow runs a command, or ampflow posts them to a webhook.
type Agent struct {
	Mode       string        `mapstructure:"mode"`
	Command    []string      `mapstructure:"command"` // argv, not a shell line
	WebhookURL string        `mapstructure:"webhook_url"`
	Timeout    time.Duration `mapstructure:"timeout"`
	// Env names the worker's environment variables a command-mode agent
	// may see beyond the base set; NAME=value sets one outright.
	Env []string `mapstructure:"env"`
	// WebhookSecret signs each webhook delivery (X-AMP-Signature).
	WebhookSecret string `mapstructure:"webhook_secret"` // secret
	// Runner names the CLI a runner-mode agent is (one of Runners); its
	// Command, when set, is the binary and fixed arguments, else the
	// runner's name on PATH.
	Runner string `mapstructure:"runner"`
	// Model is passed to a runner's CLI when set.
	Model string `mapstructure:"model"`
	// IdleTimeout: a runner that prints no event for this long is hung
	// and is stopped.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// MaxCostUSD caps what a runner may spend on one task, in dollars; a
	// run that reaches it is stopped and the admins decide. 0: no cap.
	MaxCostUSD float64 `mapstructure:"max_cost_usd"`
	// TokenName names the auth.tokens entry (of the agent's role) whose
	// name a runner's runs act under; empty: the role's name. The token
	// itself never reaches a run: each run presents a credential of its
	// own, bound to its task and role.
	TokenName string `mapstructure:"token_name"`
	// GateAgent names the gate.agents entry whose key a runner's MCP
	// server presents (X-Ampflow-Agent-Key), so its signal and contract
	// tools act as that agent; empty: they are refused.
	GateAgent string `mapstructure:"gate_agent"`
	// Sandbox confines each run of a runner: on (the default, also
	// empty) or off (docs/sandbox.md).
	Sandbox string `mapstructure:"sandbox"`
	// Accounts are a runner's credentials, tried in order: a run takes
	// the first that is not resting, and one that hits a usage or rate
	// limit rests until its reset while the run goes on with the next
	// (docs/runners.md). None: the run uses Env alone.
	Accounts []Account `mapstructure:"accounts"`
}

// Account is one credential of a runner: a name and the variables it
// sets in a run's environment, beside agents.<role>.env.
type Account struct {
	// Name tells the account in the fleet view, the timeline and the
	// metrics; AccountNameRE.
	Name string `mapstructure:"name" json:"name"`
	// Env sets each variable of the account: NAME=$SOURCE takes the
	// worker's variable SOURCE (a key is never written in the file),
	// NAME=value sets a value that is no secret (a config directory).
	Env []string `mapstructure:"env" json:"env"`
}

// Values of agents.<role>.sandbox.
const (
	SandboxOn  = "on"
	SandboxOff = "off"
)

// Slack configures the Slack integration.
type Slack struct {
	Enabled       bool     `mapstructure:"enabled"`
	Mode          string   `mapstructure:"mode"`           // socket or http
	AppToken      string   `mapstructure:"app_token"`      // secret; socket mode
	BotToken      string   `mapstructure:"bot_token"`      // secret
	SigningSecret string   `mapstructure:"signing_secret"` // secret; http mode
	Channel       string   `mapstructure:"channel"`
	Admins        []string `mapstructure:"admins"` // Slack user ids
	// AdminsEscalation are the Slack user ids called when a decision
	// escalates (nobody answered within policy.decisions.escalate_after).
	AdminsEscalation []string `mapstructure:"admins_escalation"`
	APIURL           string   `mapstructure:"api_url"`
}

// Telegram configures the Telegram integration.
type Telegram struct {
	Enabled bool     `mapstructure:"enabled"`
	Mode    string   `mapstructure:"mode"`  // polling or webhook
	Token   string   `mapstructure:"token"` // secret
	ChatID  string   `mapstructure:"chat_id"`
	Admins  []string `mapstructure:"admins"` // Telegram user ids
	// AdminsEscalation are the Telegram user ids called when a decision
	// escalates (nobody answered within policy.decisions.escalate_after).
	AdminsEscalation []string `mapstructure:"admins_escalation"`
	ServerURL        string   `mapstructure:"server_url"`
	WebhookSecret    string   `mapstructure:"webhook_secret"` // secret
}

// Notify configures what is posted to chat beyond decisions, and the
// operators' own webhooks that get every notice.
type Notify struct {
	StatusUpdates bool `mapstructure:"status_updates"`
	// Webhooks get each notice as signed JSON (docs/intake.md).
	Webhooks []NotifyWebhook `mapstructure:"webhooks"`
}

// SlackAdmin names a Slack user as an admin identity.
func SlackAdmin(userID string) string { return "slack:" + userID }

// Admin is one person who may decide: a name, and the Slack and Telegram
// user ids that are the same person.
type Admin struct {
	Name     string `mapstructure:"name" json:"name"`
	Slack    string `mapstructure:"slack" json:"slack,omitempty"`
	Telegram string `mapstructure:"telegram" json:"telegram,omitempty"`
}

// AdminsNamed is admins of names alone.
func AdminsNamed(names ...string) []Admin {
	out := make([]Admin, len(names))
	for i, n := range names {
		out[i] = Admin{Name: n}
	}
	return out
}

// AdminNames is the names of c.Admins.
func (c Config) AdminNames() []string {
	out := make([]string, len(c.Admins))
	for i, a := range c.Admins {
		out[i] = a.Name
	}
	return out
}

// SlackAdmins is slack.admins and the Slack ids of admins.
func (c Config) SlackAdmins() []string {
	out := slices.Clone(c.Slack.Admins)
	for _, a := range c.Admins {
		if a.Slack != "" && !slices.Contains(out, a.Slack) {
			out = append(out, a.Slack)
		}
	}
	return out
}

// TelegramAdmins is telegram.admins and the Telegram ids of admins.
func (c Config) TelegramAdmins() []string {
	out := slices.Clone(c.Telegram.Admins)
	for _, a := range c.Admins {
		if a.Telegram != "" && !slices.Contains(out, a.Telegram) {
			out = append(out, a.Telegram)
		}
	}
	return out
}

// Persons maps each channel identity of an admin (SlackAdmin,
// TelegramAdmin) to the admin's name: one person, counted once in a
// quorum however many channels they answer from.
func (c Config) Persons() map[string]string {
	m := map[string]string{}
	for _, a := range c.Admins {
		if a.Slack != "" {
			m[SlackAdmin(a.Slack)] = a.Name
		}
		if a.Telegram != "" {
			m[TelegramAdmin(a.Telegram)] = a.Name
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// TelegramAdmin names a Telegram user as an admin identity.
func TelegramAdmin(userID string) string { return "telegram:" + userID }
