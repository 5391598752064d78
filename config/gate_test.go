package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/config/pricing"
)

func TestValidateGate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Gate)
		want   string
	}{
		{"AgentKeyEnv", func(g *Gate) { g.Agents = []GateAgent{{ID: "a", KeyEnv: "not a name"}} }, "gate.agents[0].key_env: must name an environment variable"},
		{"AgentTwice", func(g *Gate) { g.Agents = []GateAgent{{ID: "a", KeyEnv: "K"}, {ID: "a", KeyEnv: "K2"}} }, `gate.agents[1].id: "a" is listed twice`},
		{"RuleGate", func(g *Gate) { g.Rules = []GateRule{{}, {}, {Gate: "maybe"}} }, "gate.rules[0].gate: must be declared, always or never"},
		{"RuleAction", func(g *Gate) { g.Rules = []GateRule{{Gate: GateAlways, Action: "("}} }, "gate.rules[0].action: is not a regular expression"},
		{"Allow", func(g *Gate) { g.WebhookAllow = []string{"http://x"} }, "gate.webhook_allow[0]: must be a host name"},
		{"AllowPort", func(g *Gate) { g.WebhookAllow = []string{"127.0.0.1:0"} }, "gate.webhook_allow[0]: must be a host name"},
		{"AllowWithoutSecret", func(g *Gate) { g.WebhookAllow = []string{"hooks.example.com"}; g.WebhookSecret = "" }, "gate.webhook_secret: required when gate.webhook_allow is set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig(t)
			tt.change(&c.Gate)
			err := c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestValidatePricing(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Pricing)
		want   string
	}{
		{"Budget", func(p *Pricing) { p.Budgets = []pricing.Budget{{Agent: "a", Period: "week", USD: 1}} }, "pricing.budgets[0].period: must be day or month"},
		{"BudgetTwice", func(p *Pricing) {
			p.Budgets = []pricing.Budget{{Agent: "a", Period: "day", USD: 1}, {Agent: "a", Period: "day", USD: 2}}
		}, "pricing.budgets[1]: has the agent, project and period of pricing.budgets[0]"},
		{"BudgetOwner", func(p *Pricing) { p.Budgets = []pricing.Budget{{Period: "day", USD: 1}} }, "pricing.budgets[0]: names an agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaultConfig(t)
			tt.change(&c.Pricing)
			err := c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestGateListsFromEnv(t *testing.T) {
	env := map[string]string{
		"AMPFLOW_GATE_RULES":          `[{"agent":"deployer","action":"deploy","gate":"always"}]`,
		"AMPFLOW_GATE_AGENTS":         `[{"id":"deployer","key_env":"DEPLOYER_KEY","projects":["web"]}]`,
		"AMPFLOW_GATE_WEBHOOK_SECRET": "s3cret-value",
	}
	c, err := LoadEnv(New(), "", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Gate.Rules) != 1 || c.Gate.Rules[0].Gate != GateAlways || c.Gate.Agents[0].Projects[0] != "web" {
		t.Fatalf("gate %+v", c.Gate)
	}
	if strings.Contains(c.Redacted().String(), "s3cret-value") {
		t.Fatal("webhook secret shown")
	}
}

func TestGateFromFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "ampflow.yaml")
	yaml := `gate:
  agents:
    - {id: resume-tailor, key_env: RESUME_TAILOR_KEY, projects: [job-search]}
  rules:
    - {action: "(?i)deploy", gate: always}
    - {agent: linter, cost_over_usd: 0.5, gate: never}
  webhook_allow: [hooks.example.com, "*.example.org", "127.0.0.1:9000"]
pricing:
  models:
    - {model: my-model, input: 1.5, output: 2}
  budgets:
    - {agent: resume-tailor, period: day, usd: 5}
`
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadEnv(New(), f, func(k string) (string, bool) {
		return "s3cret-value", k == "AMPFLOW_GATE_WEBHOOK_SECRET"
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	g, p := c.Gate, c.Pricing
	if len(g.Agents) != 1 || g.Agents[0].KeyEnv != "RESUME_TAILOR_KEY" || g.Rules[1].CostOverUSD != 0.5 || p.Models[0].Input != 1.5 ||
		p.Budgets[0].USD != 5 || g.WebhookAllow[1] != "*.example.org" {
		t.Fatalf("gate %+v, pricing %+v", g, p)
	}
}

// TestAdminsWithIdentities: an admins entry is a name or a person with
// their Slack and Telegram ids; the ids decide as the person, and a
// person counts once toward what a quorum can reach.
func TestAdminsWithIdentities(t *testing.T) {
	f := filepath.Join(t.TempDir(), "ampflow.yaml")
	yaml := `admins: [ops, {name: ana, slack: U123, telegram: "456"}]
slack: {admins: [U123]}
policy: {quorum: {high: 3}}
`
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadEnv(New(), f, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if want := []Admin{{Name: "ops"}, {Name: "ana", Slack: "U123", Telegram: "456"}}; !slices.Equal(c.Admins, want) {
		t.Fatalf("admins %+v, want %+v", c.Admins, want)
	}
	if p := c.Persons(); p["slack:U123"] != "ana" || p["telegram:456"] != "ana" {
		t.Errorf("persons %v", p)
	}
	if !slices.Equal(c.SlackAdmins(), []string{"U123"}) || !slices.Equal(c.TelegramAdmins(), []string{"456"}) {
		t.Errorf("chat admins %q %q", c.SlackAdmins(), c.TelegramAdmins())
	}
	// ops and ana are two people, however many identities ana holds.
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "only 2 admins") {
		t.Errorf("a quorum of 3 over two people: %v", err)
	}
	env, err := LoadEnv(New(), "", func(k string) (string, bool) { return "ops,ana", k == "AMPFLOW_ADMINS" })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(env.AdminNames(), []string{"ops", "ana"}) {
		t.Errorf("AMPFLOW_ADMINS=ops,ana gave %+v", env.Admins)
	}
}
