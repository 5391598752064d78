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
// operator's rules and the webhook callbacks; what the signals cost is
// Pricing's.
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

// gateDefaults are the defaults of the gate's keys.
var gateDefaults = map[string]any{
	"gate.agents":         []GateAgent{},
	"gate.rules":          []GateRule{},
	"gate.webhook_secret": "",
	"gate.webhook_allow":  []string{},
	"gate.callback_for":   24 * time.Hour,
}

var jsonListTypes = map[reflect.Type]bool{
	reflect.TypeOf([]GateAgent{}):          true,
	reflect.TypeOf([]GateRule{}):           true,
	reflect.TypeOf([]pricing.ModelPrice{}): true,
	reflect.TypeOf([]pricing.Budget{}):     true,
	reflect.TypeOf([]Account{}):            true,
}

// jsonList reads a list of the gate or of pricing set in the environment,
// as a JSON array: AMPFLOW_GATE_RULES='[{"agent":"deployer","gate":"always"}]'.
func jsonList(f, t reflect.Type, data any) (any, error) {
	if f.Kind() != reflect.String || !jsonListTypes[t] {
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
