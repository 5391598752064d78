package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/spf13/pflag"
)

// env returns a lookup over a fixed environment.
func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, file string, kv map[string]string) Config {
	t.Helper()
	c, err := LoadEnv(New(), file, env(kv))
	if err != nil {
		t.Fatalf("LoadEnv: %v", err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	data := filepath.Join(state, "ampflow", "dev")
	c := load(t, "", nil)
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if d := Default(); !reflect.DeepEqual(d, c) {
		t.Errorf("Default() = %+v, want what Load gives with nothing set: %+v", d, c)
	}
	checks := []struct {
		key       string
		got, want any
	}{
		{"data_dir", c.DataDir, data},
		{"ssot.url", c.SSOT.URL, filepath.Join(data, "ampflow.db")},
		{"ssot.git.dir", c.SSOT.Git.Dir, filepath.Join(data, "ssot-git")},
		{"temporal.address", c.Temporal.Address, "127.0.0.1:7233"},
		{"temporal.workflow_cache", c.Temporal.WorkflowCache, 2000},
		{"http.addr", c.HTTP.Addr, "127.0.0.1:7480"},
		{"http.rate", c.HTTP.Rate, 600},
		{"protocol.ack_timeout.task_dispatch", c.Protocol.AckTimeout.TaskDispatch, 300 * time.Second},
		{"protocol.ack_timeout.review_verdict", c.Protocol.AckTimeout.ReviewVerdict, time.Minute},
		{"protocol.heartbeat_timeout", c.Protocol.HeartbeatTimeout, 30 * time.Minute},
		{"protocol.max_rejects", c.Protocol.MaxRejects, 3},
		{"protocol.min_confidence", c.Protocol.MinConfidence, 0.8},
		{"policy.plan_approval.medium", c.Policy.PlanApproval.Medium, task.HandlingAdmin},
		{"policy.final_approval.medium", c.Policy.FinalApproval.Medium, task.HandlingAuto},
		{"ci.command.timeout", c.CI.Command.Timeout, 20 * time.Minute},
		{"agents.reviewer.mode", c.Agents.Reviewer.Mode, AgentModePull},
		{"telegram.server_url", c.Telegram.ServerURL, "https://api.telegram.org"},
		{"auth.tokens", len(c.Auth.Tokens), 0},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.key, ch.got, ch.want)
		}
	}
}

// Every field of Config is a key with a default, and every default is a
// field: otherwise env-only keys would silently not decode.
func TestKeysMatchStruct(t *testing.T) {
	var fields []string
	for k := range (Config{}).Settings() {
		fields = append(fields, k)
	}
	slices.Sort(fields)
	if keys := Keys(); !slices.Equal(fields, keys) {
		t.Errorf("Config fields and defaults differ:\nfields:   %v\ndefaults: %v", fields, keys)
	}
}

func TestFileOverridesDefaults(t *testing.T) {
	file := writeFile(t, "c.yaml", `
data_dir: /var/lib/ampflow
protocol:
  max_rejects: 5
  ack_timeout:
    task_result: 90s
ci:
  provider: command
  command:
    run: ["go", "test", "./..."]
auth:
  tokens:
    - {token: t1, role: executor, name: codex}
telegram:
  admins: [42, 43]
`)
	c := load(t, file, nil)
	if c.DataDir != "/var/lib/ampflow" {
		t.Errorf("data_dir = %q", c.DataDir)
	}
	if c.Protocol.MaxRejects != 5 || c.Protocol.AckTimeout.TaskResult != 90*time.Second {
		t.Errorf("protocol = %+v", c.Protocol)
	}
	if c.Protocol.AckTimeout.TaskDispatch != 300*time.Second {
		t.Errorf("unset sibling lost its default: %v", c.Protocol.AckTimeout.TaskDispatch)
	}
	if !slices.Equal(c.CI.Command.Run, []string{"go", "test", "./..."}) {
		t.Errorf("ci.command.run = %q", c.CI.Command.Run)
	}
	if want := []AuthToken{{"t1", amp.RoleExecutor, "codex", ""}}; !reflect.DeepEqual(c.Auth.Tokens, want) {
		t.Errorf("auth.tokens = %+v", c.Auth.Tokens)
	}
	if !slices.Equal(c.Telegram.Admins, []string{"42", "43"}) {
		t.Errorf("telegram.admins = %q", c.Telegram.Admins)
	}
}

func TestEnvOverridesFile(t *testing.T) {
	file := writeFile(t, "c.yaml", "telegram:\n  token: from-file\nprotocol:\n  max_rejects: 5\n")
	c := load(t, file, map[string]string{
		"AMPFLOW_TELEGRAM_TOKEN":       "from-env",
		"AMPFLOW_PROTOCOL_MAX_REJECTS": "7",
	})
	if c.Telegram.Token != "from-env" || c.Protocol.MaxRejects != 7 {
		t.Errorf("telegram.token, protocol.max_rejects = %q, %d; want the environment's", c.Telegram.Token, c.Protocol.MaxRejects)
	}
}

// The process environment, read through Load, reaches a key that no file
// sets: viper's Unmarshal would miss it were the key not known.
func TestEnvOnlyKey(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("AMPFLOW_PROTOCOL_ACK_TIMEOUT_TASK_DISPATCH", "45s")
	t.Setenv("AMPFLOW_SLACK_SIGNING_SECRET", "s3")
	t.Setenv("AMPFLOW_DATA_DIR", "/srv/amp")
	c, err := Load(New(), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Protocol.AckTimeout.TaskDispatch != 45*time.Second {
		t.Errorf("protocol.ack_timeout.task_dispatch = %v, want 45s", c.Protocol.AckTimeout.TaskDispatch)
	}
	if c.Slack.SigningSecret != "s3" || c.DataDir != "/srv/amp" {
		t.Errorf("slack.signing_secret, data_dir = %q, %q", c.Slack.SigningSecret, c.DataDir)
	}
}

func TestEnvLists(t *testing.T) {
	c := load(t, "", map[string]string{
		"AMPFLOW_TELEGRAM_ADMINS":         "42,43",
		"AMPFLOW_CI_COMMAND_RUN":          "go,test,./...",
		"AMPFLOW_AGENTS_EXECUTOR_COMMAND": "codex,exec",
		"AMPFLOW_SLACK_ADMINS":            "",
	})
	if !slices.Equal(c.Telegram.Admins, []string{"42", "43"}) {
		t.Errorf("telegram.admins = %q", c.Telegram.Admins)
	}
	if !slices.Equal(c.CI.Command.Run, []string{"go", "test", "./..."}) {
		t.Errorf("ci.command.run = %q", c.CI.Command.Run)
	}
	if !slices.Equal(c.Agents.Executor.Command, []string{"codex", "exec"}) {
		t.Errorf("agents.executor.command = %q", c.Agents.Executor.Command)
	}
	if len(c.Slack.Admins) != 0 {
		t.Errorf("slack.admins = %q, want empty", c.Slack.Admins)
	}
}

func TestEnvAuthTokens(t *testing.T) {
	c := load(t, "", map[string]string{"AMPFLOW_AUTH_TOKENS": "abc:executor:codex, def:reviewer:claude#28a5d3df-6104,ghi:admin:ops:eu"})
	want := []AuthToken{{"abc", "executor", "codex", ""}, {"def", "reviewer", "claude", "28a5d3df-6104"}, {"ghi", "admin", "ops:eu", ""}}
	if !reflect.DeepEqual(c.Auth.Tokens, want) {
		t.Errorf("auth.tokens = %+v, want %+v", c.Auth.Tokens, want)
	}

	_, err := LoadEnv(New(), "", env(map[string]string{"AMPFLOW_AUTH_TOKENS": "secretvalue"}))
	if err == nil || !strings.Contains(err.Error(), "token:role:name") {
		t.Errorf("malformed token: err = %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "secretvalue") {
		t.Errorf("error shows the token: %v", err)
	}
}

func TestFlagOverridesEnv(t *testing.T) {
	v := New()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.String("log-level", "", "")
	if err := v.BindPFlag("log.level", fs.Lookup("log-level")); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--log-level=debug"}); err != nil {
		t.Fatal(err)
	}
	c, err := LoadEnv(v, "", env(map[string]string{"AMPFLOW_LOG_LEVEL": "warn"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.Level != "debug" {
		t.Errorf("log.level = %q, want the flag's debug", c.Log.Level)
	}
}

func TestDefaultFileInWorkingDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DefaultFile), []byte("log:\n  format: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if c := load(t, "", nil); c.Log.Format != "json" {
		t.Errorf("log.format = %q; ./%s was not read", c.Log.Format, DefaultFile)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string // contents; "" means a missing file
		env     map[string]string
		wantErr string
	}{
		{"MissingFile", "", nil, "no such file"},
		{"UnknownKey", "protocl:\n  max_rejects: 2\n", nil, "unknown keys: protocl.max_rejects"},
		{"BadYAML", "log: [\n", nil, "reading config file"},
		{"BareDuration", "ci:\n  timeout: 300\n", nil, "has no unit"},
		{"BadEnvDuration", "log:\n  level: info\n", map[string]string{"AMPFLOW_CI_TIMEOUT": "soon"}, "ci.timeout"},
		{"BadEnvInt", "log:\n  level: info\n", map[string]string{"AMPFLOW_PROTOCOL_MAX_REJECTS": "many"}, "max_rejects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "missing.yaml")
			if tt.file != "" {
				file = writeFile(t, "c.yaml", tt.file)
			}
			_, err := LoadEnv(New(), file, env(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"telegram.token":                     "AMPFLOW_TELEGRAM_TOKEN",
		"protocol.ack_timeout.task_dispatch": "AMPFLOW_PROTOCOL_ACK_TIMEOUT_TASK_DISPATCH",
		"data_dir":                           "AMPFLOW_DATA_DIR",
	} {
		if got := EnvName(key); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", key, got, want)
		}
	}
}

// A command written as one string in the file is refused with the list
// that fixes it, not run as a program named "python3 agent.py".
func TestCommandStringRefused(t *testing.T) {
	file := writeFile(t, "ampflow.yaml", "agents:\n  executor:\n    mode: command\n    command: python3 agent.py\n")
	c := load(t, file, nil)
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "agents.executor.command") || !strings.Contains(err.Error(), "[python3, agent.py]") {
		t.Fatalf("Validate() = %v, want agents.executor.command refused with the list form", err)
	}
	fixed := load(t, writeFile(t, "ampflow.yaml", "agents:\n  executor:\n    mode: command\n    command: [python3, agent.py]\n"), nil)
	if err := fixed.Validate(); err != nil {
		t.Fatalf("the list form: %v", err)
	}
	fromEnv := load(t, "", map[string]string{"AMPFLOW_AGENTS_EXECUTOR_MODE": "command", "AMPFLOW_AGENTS_EXECUTOR_COMMAND": "python3 agent.py"})
	if err := fromEnv.Validate(); err == nil || !strings.Contains(err.Error(), "python3,agent.py") {
		t.Fatalf("from the environment: Validate() = %v, want the comma-separated fix", err)
	}
}

// TestSecretFiles: the files a sandboxed run must not read are the
// configuration file read, the key files it names and a SQLite store,
// and nothing when there is none of them.
func TestSecretFiles(t *testing.T) {
	c := Default()
	c.SSOT.URL = "postgres://db/ampflow"
	if got := c.SecretFiles(); len(got) != 0 {
		t.Errorf("no files: %q", got)
	}
	c.File = "/etc/ampflow/ampflow.yaml"
	c.Auth.DecisionKeyFile = "/run/secrets/decision.key"
	c.Temporal.TLS.KeyFile = "/etc/ampflow/tls.key"
	c.SSOT.URL = "sqlite:///srv/ampflow.db"
	want := []string{"/etc/ampflow/ampflow.yaml", "/run/secrets/decision.key", "/etc/ampflow/tls.key", "/srv/ampflow.db", "/srv/ampflow.db-wal", "/srv/ampflow.db-shm"}
	if got := c.SecretFiles(); !slices.Equal(got, want) {
		t.Errorf("SecretFiles = %q, want %q", got, want)
	}
}

// TestDefaultDataDir: with nothing set, state goes to the user's state
// directory, never the directory ampflow starts in.
func TestDefaultDataDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct{ xdg, want string }{
		{"/var/state", "/var/state/ampflow/dev"},
		{"", filepath.Join(home, ".local", "state", "ampflow", "dev")},
		{"relative/state", filepath.Join(home, ".local", "state", "ampflow", "dev")}, // ignored, as the XDG spec says
	} {
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		if got := DefaultDataDir(); got != tc.want {
			t.Errorf("XDG_STATE_HOME=%q: DefaultDataDir() = %q, want %q", tc.xdg, got, tc.want)
		}
	}
	t.Setenv("XDG_STATE_HOME", "")
	if c := load(t, "", map[string]string{"AMPFLOW_DATA_DIR": "/srv/amp"}); c.DataDir != "/srv/amp" {
		t.Errorf("AMPFLOW_DATA_DIR set: data_dir = %q", c.DataDir)
	}
}
