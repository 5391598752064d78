package config

import (
	"encoding/json"
	"fmt"
	"github.com/ampflow/ampflow/config/pricing"
	"net"
	"net/netip"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Gate configures the action gate: the agents that may send signals, the
// operator's rules, the webhook callbacks, pricing and budgets.
type Gate struct {
	// Agents may post signals, each with its own bearer key read from the
	// environment variable KeyEnv, for the projects listed.
	Agents []GateAgent `mapstructure:"agents" json:"agents"`
	// Rules are matched in order; the first that matches says whether a
	// signal is gated. None matching is GateDeclared.
	Rules []GateRule `mapstructure:"rules" json:"rules"`
	// WebhookSecret signs the resolution callbacks. Secret.
	WebhookSecret string `mapstructure:"webhook_secret" json:"-"`
	// WebhookAllow lists the hosts a signal's webhook_url may name, each
	// with an optional port; a private or loopback address only with one:
	// "hooks.example.com", "*.example.com", "127.0.0.1:9000". None refuses
	// every webhook_url.
	WebhookAllow []string `mapstructure:"webhook_allow" json:"webhook_allow"`
	// CallbackFor is how long a resolution is retried to the webhook.
	CallbackFor time.Duration `mapstructure:"callback_for" json:"callback_for"`
	// Pricing is USD per million tokens by model; it overrides and adds to
	// the built-in table (DefaultPricing).
	Pricing []pricing.ModelPrice `mapstructure:"pricing" json:"pricing"`
	// DefaultPrice prices a runner's tokens of a model the table does not
	// name: an unknown model is never free.
	DefaultPrice pricing.Price `mapstructure:"default_price" json:"default_price"`
	// Budgets cap the spend of an agent or a project per day or month.
	Budgets []GateBudget `mapstructure:"budgets" json:"budgets"`
	// Contracts are the risk contracts' keys (config/contracts.go).
	Contracts `mapstructure:",squash"`
}

// GateAgent is one agent allowed to post signals.
type GateAgent struct {
	ID string `mapstructure:"id" json:"id"`
	// KeyEnv names the environment variable that holds the agent's bearer
	// key; the key itself is never in a file.
	KeyEnv string `mapstructure:"key_env" json:"key_env"`
	// Projects the agent may post for; "*" or none is any.
	Projects []string `mapstructure:"projects" json:"projects"`
}

// Gate rule outcomes.
const (
	GateDeclared = "declared" // gated when the agent set gate_required
	GateAlways   = "always"   // gated whatever the agent said
	GateNever    = "never"    // never gated
)

// GateRule says whether the signals it matches are gated. Empty fields
// match everything.
type GateRule struct {
	Agent   string `mapstructure:"agent" json:"agent"`
	Project string `mapstructure:"project" json:"project"`
	Model   string `mapstructure:"model" json:"model"`
	Status  string `mapstructure:"status" json:"status"`
	// CostOverUSD matches a signal whose cost is above it; zero matches all.
	CostOverUSD float64 `mapstructure:"cost_over_usd" json:"cost_over_usd"`
	// Action is a regular expression (RE2) the proposed_action must match.
	Action string `mapstructure:"action" json:"action"`
	// Gate is declared, always or never.
	Gate string `mapstructure:"gate" json:"gate"`
}

// Budget periods.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// GateBudget caps spending: of one agent, one project, or one agent in
// one project (both set), per day or month (UTC).
type GateBudget struct {
	Agent   string  `mapstructure:"agent" json:"agent"`
	Project string  `mapstructure:"project" json:"project"`
	Period  string  `mapstructure:"period" json:"period"`
	USD     float64 `mapstructure:"usd" json:"usd"`
}

// gateDefaults are the defaults of the gate's keys.
var gateDefaults = map[string]any{
	"gate.agents":         []GateAgent{},
	"gate.rules":          []GateRule{},
	"gate.webhook_secret": "",
	"gate.webhook_allow":  []string{},
	"gate.callback_for":   24 * time.Hour,
	"gate.pricing":        []pricing.ModelPrice{},
	// A frontier model's price (pricing.DefaultUnknown).
	"gate.default_price.input":  5.00,
	"gate.default_price.output": 25.00,
	"gate.budgets":              []GateBudget{},
}

var gateListTypes = map[reflect.Type]bool{
	reflect.TypeOf([]GateAgent{}):          true,
	reflect.TypeOf([]GateRule{}):           true,
	reflect.TypeOf([]pricing.ModelPrice{}): true,
	reflect.TypeOf([]GateBudget{}):         true,
}

// jsonGateList reads a gate list set in the environment, as a JSON array:
// AMPFLOW_GATE_RULES='[{"agent":"deployer","gate":"always"}]'.
func jsonGateList(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String || !gateListTypes[t] {
		return data, nil
	}
	s := strings.TrimSpace(data.(string))
	out := reflect.New(t)
	if s == "" {
		return out.Elem().Interface(), nil
	}
	if err := json.Unmarshal([]byte(s), out.Interface()); err != nil {
		return nil, fmt.Errorf("a JSON array is expected: %w", err)
	}
	return out.Elem().Interface(), nil
}

func (c Config) validateGate(ps *problems) {
	g := c.Gate
	seen := map[string]bool{}
	for i, a := range g.Agents {
		k := fmt.Sprintf("gate.agents[%d]", i)
		switch {
		case a.ID == "":
			ps.add(k+".id", "is required")
		case seen[a.ID]:
			ps.add(k+".id", "%q is listed twice", a.ID)
		}
		seen[a.ID] = true
		if !envName.MatchString(a.KeyEnv) {
			ps.add(k+".key_env", "must name an environment variable holding the agent's key, not %q", a.KeyEnv)
		}
	}
	for i, r := range g.Rules {
		k := fmt.Sprintf("gate.rules[%d]", i)
		ps.oneOf(k+".gate", r.Gate, GateDeclared, GateAlways, GateNever)
		if r.Status != "" {
			ps.oneOf(k+".status", r.Status, "completed", "failed", "interrupted")
		}
		if r.CostOverUSD < 0 {
			ps.add(k+".cost_over_usd", "must not be negative")
		}
		if r.Action != "" {
			if _, err := regexp.Compile(r.Action); err != nil {
				ps.add(k+".action", "is not a regular expression: %v", err)
			}
		}
	}
	for i, h := range g.WebhookAllow {
		if !webhookAllowEntry(h) {
			ps.add(fmt.Sprintf("gate.webhook_allow[%d]", i), "must be a host name or IP, or *.domain, each with an optional :port (a private or loopback address needs one), not %q", h)
		}
	}
	// A callback nobody can verify lets anyone who learns a webhook_url
	// forge a resolution: no webhook without the secret that signs it.
	if len(g.WebhookAllow) > 0 && strings.TrimSpace(g.WebhookSecret) == "" {
		ps.add("gate.webhook_secret", "required when gate.webhook_allow is set (it signs each resolution callback): set AMPFLOW_GATE_WEBHOOK_SECRET")
	}
	ps.positive("gate.callback_for", g.CallbackFor)
	for i, p := range g.Pricing {
		k := fmt.Sprintf("gate.pricing[%d]", i)
		if p.Model == "" {
			ps.add(k+".model", "is required")
		}
		if p.Input < 0 || p.Output < 0 {
			ps.add(k, "prices must not be negative")
		}
	}
	if dp := g.DefaultPrice; dp.Input < 0 || dp.Output < 0 || dp.Input+dp.Output == 0 {
		ps.add("gate.default_price", "prices a model gate.pricing does not name; it must not be negative nor free, not input %v, output %v", dp.Input, dp.Output)
	}
	budgets := map[[3]string]int{}
	for i, b := range g.Budgets {
		k := fmt.Sprintf("gate.budgets[%d]", i)
		if j, dup := budgets[[3]string{b.Agent, b.Project, b.Period}]; dup {
			ps.add(k, "has the agent, project and period of gate.budgets[%d]", j)
		}
		budgets[[3]string{b.Agent, b.Project, b.Period}] = i
		if b.Agent == "" && b.Project == "" {
			ps.add(k, "names an agent, a project or both")
		}
		ps.oneOf(k+".period", b.Period, PeriodDay, PeriodMonth)
		if b.USD <= 0 {
			ps.add(k+".usd", "must be more than 0")
		}
	}
}

func init() {
	for k, v := range gateDefaults {
		defaults[k] = v
	}
}

// webhookAllowEntry says whether h is a gate.webhook_allow entry: a host,
// an IP or *.domain, with an optional port ("127.0.0.1:9000",
// "[::1]:9000").
func webhookAllowEntry(h string) bool {
	if host, port, err := net.SplitHostPort(h); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return false
		}
		h = host
		if strings.Contains(h, ":") {
			_, err := netip.ParseAddr(h)
			return err == nil
		}
	}
	return h != "" && !strings.ContainsAny(h, "/:[] ") && strings.Count(h, "*") <= 1 && (!strings.Contains(h, "*") || strings.HasPrefix(h, "*."))
}
