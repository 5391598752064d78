package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// DefaultFile is the configuration file Load reads when none is named and
// it exists in the working directory.
const DefaultFile = "ampflow.yaml"

// DefaultSSOTFile is the SQLite file in DataDir that holds the SSOT when
// ssot.url is not set.
const DefaultSSOTFile = "ampflow.db"

// EnvPrefix starts the name of every environment variable Load reads.
const EnvPrefix = "AMPFLOW_"

// defaults holds the default of every key. A key without a default is
// unknown: a file may not set it and no environment variable reaches it.
var defaults = map[string]any{
	"data_dir": "", // DefaultDataDir, at decode

	"log.level":  "info",
	"log.format": "text",

	"temporal.address":         "127.0.0.1:7233",
	"temporal.namespace":       "default",
	"temporal.task_queue":      "ampflow",
	"temporal.tls.enabled":     false,
	"temporal.tls.cert_file":   "",
	"temporal.tls.key_file":    "",
	"temporal.tls.ca_file":     "",
	"temporal.tls.server_name": "",
	"temporal.api_key":         "",
	"temporal.plaintext":       false,
	"temporal.workflow_cache":  DefaultWorkflowCache,

	"dev.temporal_port": 7233,
	"dev.ui_port":       8233,
	"dev.temporal_ip":   "127.0.0.1",
	"dev.temporal_db":   "",
	"dev.ui_writes":     false,

	"http.addr": "127.0.0.1:7480",
	"http.rate": 600,

	"api.url":   "http://127.0.0.1:7480",
	"api.token": "",

	"auth.tokens":            []AuthToken{},
	"auth.decision_key":      "",
	"auth.decision_key_file": "",
	"admins":                 []string{},

	"admins_escalation": []string{},

	// The ACK deadlines AMP/1.0 sets per message type.
	"protocol.ack_timeout.task_dispatch":  ackDefault(amp.TypeTaskDispatch),
	"protocol.ack_timeout.task_result":    ackDefault(amp.TypeTaskResult),
	"protocol.ack_timeout.review_request": ackDefault(amp.TypeReviewRequest),
	"protocol.ack_timeout.review_verdict": ackDefault(amp.TypeReviewVerdict),
	"protocol.heartbeat_timeout":          30 * time.Minute,
	"protocol.max_rejects":                3,
	"protocol.max_ci_rounds":              3,
	"protocol.min_confidence":             0.8,

	"policy.plan_approval.low":        string(task.HandlingAuto),
	"policy.plan_approval.medium":     string(task.HandlingAdmin),
	"policy.plan_approval.high":       string(task.HandlingAdmin),
	"policy.final_approval.low":       string(task.HandlingAuto),
	"policy.final_approval.medium":    string(task.HandlingAuto),
	"policy.final_approval.high":      string(task.HandlingAdmin),
	"policy.quorum.low":               1,
	"policy.quorum.medium":            1,
	"policy.quorum.high":              1,
	"policy.decisions.remind_after":   time.Hour,
	"policy.decisions.escalate_after": 4 * time.Hour,
	"policy.decisions.expire_after":   24 * time.Hour,
	"policy.lease_wait":               time.Hour,

	"ci.provider":        ProviderNone,
	"ci.poll_interval":   30 * time.Second,
	"ci.timeout":         30 * time.Minute,
	"ci.github.token":    "",
	"ci.github.api_url":  "https://api.github.com/",
	"ci.github.repo":     "",
	"ci.command.run":     []string{},
	"ci.command.timeout": DefaultCICommandTimeout,
	"ci.command.env":     []string{},

	"ssot.url":            "",
	"ssot.sweep_interval": 5 * time.Minute,
	"ssot.git.commit":     false,
	"ssot.git.push":       false,
	"ssot.git.remote":     "origin",
	"ssot.git.dir":        "",

	"agents.executor.mode":           AgentModePull,
	"agents.executor.command":        []string{},
	"agents.executor.webhook_url":    "",
	"agents.executor.timeout":        DefaultAgentTimeout,
	"agents.executor.env":            []string{},
	"agents.executor.webhook_secret": "",
	"agents.executor.runner":         "",
	"agents.executor.model":          "",
	"agents.executor.idle_timeout":   DefaultAgentIdleTimeout,
	"agents.executor.max_cost_usd":   0.0,
	"agents.executor.sandbox":        SandboxOn,
	"agents.executor.accounts":       []Account{},
	"agents.reviewer.mode":           AgentModePull,
	"agents.reviewer.command":        []string{},
	"agents.reviewer.webhook_url":    "",
	"agents.reviewer.timeout":        DefaultAgentTimeout,
	"agents.reviewer.env":            []string{},
	"agents.reviewer.webhook_secret": "",
	"agents.reviewer.runner":         "",
	"agents.reviewer.model":          "",
	"agents.reviewer.idle_timeout":   DefaultAgentIdleTimeout,
	"agents.reviewer.max_cost_usd":   0.0,
	"agents.reviewer.sandbox":        SandboxOn,
	"agents.reviewer.accounts":       []Account{},

	"sandbox.network.allow": []string{},

	"slack.enabled":           false,
	"slack.mode":              SlackModeSocket,
	"slack.app_token":         "",
	"slack.bot_token":         "",
	"slack.signing_secret":    "",
	"slack.channel":           "",
	"slack.admins":            []string{},
	"slack.admins_escalation": []string{},
	"slack.api_url":           "https://slack.com/api/",

	"telegram.enabled":           false,
	"telegram.mode":              TelegramModePolling,
	"telegram.token":             "",
	"telegram.chat_id":           "",
	"telegram.admins":            []string{},
	"telegram.admins_escalation": []string{},
	"telegram.server_url":        "https://api.telegram.org",
	"telegram.webhook_secret":    "",

	"notify.status_updates": false,
}

// New returns a fresh viper instance holding the default of every key.
// Commands bind their flags to it, then pass it to Load.
func New() *viper.Viper {
	v := viper.New()
	for k, val := range defaults {
		v.SetDefault(k, val)
	}
	return v
}

// DefaultDataDir is data_dir when nothing sets it (or sets it empty): the user's state
// directory, $XDG_STATE_HOME/ampflow/dev, else
// ~/.local/state/ampflow/dev. Not the directory ampflow starts in: run
// from a source tree (ampflow's own, say), its worktrees and databases
// would land inside it. ./.ampflow only when there is no home.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "ampflow", "dev")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "ampflow", "dev")
	}
	return "./.ampflow"
}

// Keys returns every configuration key, sorted.
func Keys() []string {
	keys := make([]string, 0, len(defaults))
	for k := range defaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// EnvName returns the environment variable that sets key:
// "protocol.max_rejects" is AMPFLOW_PROTOCOL_MAX_REJECTS.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Load reads the configuration from the process environment; see LoadEnv.
func Load(v *viper.Viper, file string) (Config, error) {
	return LoadEnv(v, file, os.LookupEnv)
}

// LoadEnv layers the file and the environment over v's defaults and decodes
// the result. The file is the one named, else ./ampflow.yaml if present; a
// named file that is missing is an error, as is a key the file sets that
// ampflow does not know. Environment variables (EnvName of each key, looked
// up with lookup) override the file; flags bound to v override both.
// Lists read from the environment are comma-separated. LoadEnv does not
// validate; call Config.Validate.
func LoadEnv(v *viper.Viper, file string, lookup func(string) (string, bool)) (Config, error) {
	if file == "" {
		if _, err := os.Stat(DefaultFile); err == nil {
			file = DefaultFile
		}
	}
	if file != "" {
		if err := readFile(v, file); err != nil {
			return Config{}, err
		}
	}
	if lookup != nil {
		// Environment values are merged into the file's layer rather than
		// read through viper.AutomaticEnv: that keeps the lookup injectable
		// and Unmarshal sees every variable, not only keys viper has seen.
		if err := v.MergeConfigMap(envSettings(lookup)); err != nil {
			return Config{}, fmt.Errorf("reading environment: %w", err)
		}
	}
	c, err := decode(v)
	if err == nil && file != "" {
		if abs, aerr := filepath.Abs(file); aerr == nil {
			c.File = abs
		}
	}
	return c, err
}

// Default is the configuration with nothing set: every key at its
// default, the one place defaults are defined.
func Default() Config {
	c, err := decode(New())
	if err != nil {
		// The defaults are constants; TestDefault decodes them.
		panic(err)
	}
	return c
}

func decode(v *viper.Viper) (Config, error) {
	var c Config
	if err := v.Unmarshal(&c, viper.DecodeHook(decodeHook())); err != nil {
		return Config{}, fmt.Errorf("decoding configuration: %s", flattenDecodeError(err))
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir()
	}
	if c.SSOT.URL == "" {
		c.SSOT.URL = filepath.Join(c.DataDir, DefaultSSOTFile)
	}
	if c.SSOT.Git.Dir == "" {
		c.SSOT.Git.Dir = filepath.Join(c.DataDir, "ssot-git")
	}
	return c, nil
}

func readFile(v *viper.Viper, file string) error {
	f := viper.New()
	f.SetConfigFile(file)
	if filepath.Ext(file) == "" {
		f.SetConfigType("yaml")
	}
	if err := f.ReadInConfig(); err != nil {
		return fmt.Errorf("reading config file %s: %w", file, err)
	}
	var unknown []string
	for _, k := range f.AllKeys() {
		if _, ok := defaults[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("reading config file %s: unknown keys: %s", file, strings.Join(unknown, ", "))
	}
	return v.MergeConfigMap(f.AllSettings())
}

// envSettings returns the nested settings map of every key set in the
// environment.
func envSettings(lookup func(string) (string, bool)) map[string]any {
	settings := map[string]any{}
	for key := range defaults {
		val, ok := lookup(EnvName(key))
		if !ok {
			continue
		}
		parts := strings.Split(key, ".")
		m := settings
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = val
	}
	return settings
}

func decodeHook() mapstructure.DecodeHookFunc {
	return mapstructure.ComposeDecodeHookFunc(
		rejectBareDuration,
		mapstructure.StringToTimeDurationHookFunc(),
		stringToAuthTokens,
		jsonList,
		jsonToolRules,
		mapstructure.StringToSliceHookFunc(","),
		stringToAdmin,
	)
}

var (
	adminType  = reflect.TypeOf(Admin{})
	adminsType = reflect.TypeOf([]Admin{})
)

// stringToAdmin reads admins given as names: one entry, or a list of
// them separated by commas (AMPFLOW_ADMINS=ops,ana).
func stringToAdmin(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String {
		return data, nil
	}
	switch t {
	case adminType:
		return Admin{Name: data.(string)}, nil
	case adminsType:
		if data.(string) == "" {
			return []Admin{}, nil
		}
		return AdminsNamed(strings.Split(data.(string), ",")...), nil
	}
	return data, nil
}

var (
	durationType   = reflect.TypeOf(time.Duration(0))
	authTokensType = reflect.TypeOf([]AuthToken{})
)

// rejectBareDuration refuses a number where a duration belongs: decoded
// weakly, "ack_timeout: 300" would be 300ns.
func rejectBareDuration(f, t reflect.Type, data any) (any, error) {
	if t != durationType || f == durationType {
		return data, nil
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil, fmt.Errorf("duration %v has no unit (write e.g. %vs or %vm)", data, data, data)
	}
	return data, nil
}

// stringToAuthTokens parses "token:role:name,token:role:name".
func stringToAuthTokens(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String || t != authTokensType {
		return data, nil
	}
	return ParseAuthTokens(data.(string))
}

// ParseAuthTokens parses the environment form of auth.tokens:
// "token:role:name,token:role:name", a name followed by #id for a token
// with an id ("token:role:name#id"). A missing name is left for Validate
// to refuse, naming the token.
func ParseAuthTokens(s string) ([]AuthToken, error) {
	tokens := []AuthToken{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.SplitN(item, ":", 3)
		if len(parts) < 2 {
			return nil, fmt.Errorf("auth token %d: want token:role:name", i+1)
		}
		tok := AuthToken{Token: parts[0], Role: amp.Role(parts[1])}
		if len(parts) == 3 {
			tok.Name = parts[2]
			if name, id, ok := strings.Cut(tok.Name, "#"); ok {
				tok.Name, tok.ID = name, id
			}
		}
		tokens = append(tokens, tok)
	}
	return tokens, nil
}

// flattenDecodeError puts mapstructure's multi-line report on one line.
func flattenDecodeError(err error) string {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "*"))
		if l == "" || strings.HasPrefix(l, "decoding failed due to") {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return err.Error()
	}
	return strings.Join(lines, "; ")
}

// Defaults that code outside the configuration falls back to when handed
// a zero value.
const (
	// DefaultCICommandTimeout is ci.command.timeout's default.
	DefaultCICommandTimeout = 20 * time.Minute
	// DefaultAgentTimeout is agents.*.timeout's default.
	DefaultAgentTimeout = 30 * time.Minute
	// DefaultAgentIdleTimeout is agents.*.idle_timeout's default: a runner
	// silent this long is hung. It is above tools.ask_timeout's default:
	// a CLI waiting for the admins' answer prints nothing.
	DefaultAgentIdleTimeout = 15 * time.Minute
)

// ackDefault is AMP/1.0's ACK deadline of a message type.
func ackDefault(t amp.Type) time.Duration {
	return time.Duration(amp.DefaultAckTimeout(t)) * time.Second
}
