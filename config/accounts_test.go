package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestValidateAccounts(t *testing.T) {
	runner := func(c *Config, accounts ...Account) {
		c.Agents.Executor.Mode, c.Agents.Executor.Runner = AgentModeRunner, "claude"
		c.Agents.Executor.Accounts = accounts
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   []string
	}{
		{"Valid", func(c *Config) {
			runner(c, Account{Name: "a", Env: []string{"ANTHROPIC_API_KEY=$KEY_A"}},
				Account{Name: "team-b", Env: []string{"ANTHROPIC_API_KEY=$KEY_B", "CLAUDE_CONFIG_DIR=/home/u/.claude-b"}})
		}, nil},
		{"NameTwice", func(c *Config) {
			runner(c, Account{Name: "a", Env: []string{"ANTHROPIC_API_KEY=$KEY_A"}}, Account{Name: "a", Env: []string{"ANTHROPIC_API_KEY=$KEY_B"}})
		}, []string{`agents.executor.accounts[1].name: "a" is listed twice`}},
		{"BadName", func(c *Config) {
			runner(c, Account{Name: "A b", Env: []string{"ANTHROPIC_API_KEY=$KEY_A"}})
		}, []string{`agents.executor.accounts[0].name: must be 1 to 40`}},
		{"NoEnv", func(c *Config) { runner(c, Account{Name: "a"}) }, []string{`agents.executor.accounts[0].env: must set at least one variable`}},
		{"KeyInClear", func(c *Config) {
			runner(c, Account{Name: "a", Env: []string{"ANTHROPIC_API_KEY=sk-ant-123"}})
		}, []string{`agents.executor.accounts[0].env[0]: sets the secret ANTHROPIC_API_KEY in clear`}},
		{"BareName", func(c *Config) {
			runner(c, Account{Name: "a", Env: []string{"ANTHROPIC_API_KEY"}})
		}, []string{`agents.executor.accounts[0].env[0]: must be NAME=$SOURCE`}},
		{"AmpflowSource", func(c *Config) {
			runner(c, Account{Name: "a", Env: []string{"ANTHROPIC_API_KEY=$AMPFLOW_API_TOKEN"}})
		}, []string{`agents.executor.accounts[0].env[0]: must not pass ampflow's own AMPFLOW_API_TOKEN`}},
		{"NotRunner", func(c *Config) {
			c.Agents.Reviewer.Accounts = []Account{{Name: "a", Env: []string{"OPENAI_API_KEY=$KEY_A"}}}
		}, []string{`agents.reviewer.accounts: only a runner has accounts`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig(t)
			tt.change(&c)
			err := c.Validate()
			var ve *ValidationError
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &ve) || len(ve.Problems) != len(tt.want) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
			for i, w := range tt.want {
				if got := ve.Problems[i].String(); !strings.HasPrefix(got, w) {
					t.Errorf("problem %d = %q, want prefix %q", i, got, w)
				}
			}
		})
	}
}

// The environment sets accounts as a JSON array.
func TestAccountsFromEnvironment(t *testing.T) {
	env := map[string]string{
		"AMPFLOW_AGENTS_EXECUTOR_MODE":     "runner",
		"AMPFLOW_AGENTS_EXECUTOR_RUNNER":   "claude",
		"AMPFLOW_AGENTS_EXECUTOR_ACCOUNTS": `[{"name":"a","env":["ANTHROPIC_API_KEY=$KEY_A"]},{"name":"b","env":["ANTHROPIC_API_KEY=$KEY_B"]}]`,
	}
	c, err := LoadEnv(New(), "", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	want := []Account{{Name: "a", Env: []string{"ANTHROPIC_API_KEY=$KEY_A"}}, {Name: "b", Env: []string{"ANTHROPIC_API_KEY=$KEY_B"}}}
	if !reflect.DeepEqual(c.Agents.Executor.Accounts, want) {
		t.Errorf("accounts = %+v, want %+v", c.Agents.Executor.Accounts, want)
	}
}
