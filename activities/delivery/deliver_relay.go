package delivery

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ampflow/ampflow/activities/runner"
)

// relayPort is where a run's first relay to a model API off this
// machine listens inside its sandbox; the next ones take the ports after.
const relayPort = 4100

// defaultModelAPIs are, by runner, the variable its CLI reads its model
// API from and the API it uses when the variable is unset: a run whose
// role's env names no API still has its key relayed. (Gemini CLI is not
// here: given a base URL, it picks another way to sign in; name
// GOOGLE_GEMINI_BASE_URL in the role's env and select the API key in
// its settings.)
var defaultModelAPIs = map[string][2]string{
	runner.Claude: {"ANTHROPIC_BASE_URL", "https://api.anthropic.com"},
	runner.Codex:  {"OPENAI_BASE_URL", "https://api.openai.com/v1"},
}

// keyedModelAPIs are, for an ACP agent (which may be any vendor's), the
// model API a vendor's key variable implies when the run names no base
// URL for it: Claude Code's adapter and Codex's read the same variables
// as their CLIs.
var keyedModelAPIs = map[string][2]string{
	"ANTHROPIC_API_KEY": defaultModelAPIs[runner.Claude],
	"OPENAI_API_KEY":    defaultModelAPIs[runner.Codex],
}

// fileBaseURL finds a model API named in a configuration file the run is
// given (OpenCode's provider "baseURL", Codex's base_url).
var fileBaseURL = regexp.MustCompile(`(?i)"?base_?url"?\s*[:=]\s*"(https?://[^"\s]+)"`)

// modelAPI is a model API the run's configuration names: in the variable
// env (a *_BASE_URL, which a relay off this machine is put in), or in a
// file (env empty).
type modelAPI struct {
	env string
	url *url.URL
}

// modelAPIs lists the model APIs spec's configuration names.
func modelAPIs(spec *runner.Spec) []modelAPI {
	var out []modelAPI
	for _, kv := range lastValues(spec.Env) {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(strings.ToUpper(name), "_BASE_URL") {
			continue
		}
		if u, err := url.Parse(value); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			out = append(out, modelAPI{env: name, url: u})
		}
	}
	defaults := [][2]string{}
	if def, ok := defaultModelAPIs[spec.Runner]; ok {
		defaults = append(defaults, def)
	}
	if spec.Runner == runner.ACP {
		for key, def := range keyedModelAPIs {
			if v, ok := lookupEnv(spec.Env, key); ok && v != "" {
				defaults = append(defaults, def)
			}
		}
		slices.SortFunc(defaults, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	}
	for _, def := range defaults {
		if !hasEnv(spec.Env, def[0]) {
			u, _ := url.Parse(def[1])
			out = append(out, modelAPI{env: def[0], url: u})
		}
	}
	for _, f := range givenFiles(spec) {
		for _, m := range fileBaseURL.FindAllStringSubmatch(f, -1) {
			if u, err := url.Parse(m[1]); err == nil && u.Host != "" {
				out = append(out, modelAPI{url: u})
			}
		}
	}
	return out
}

// modelRelays gives a sandboxed run's model APIs relays (runner.Relay)
// and takes its keys out of its environment: each secret-looking
// variable of the role's env is given to the run as a placeholder, which
// the relays replace with the real value on the way out. A model API on
// this machine's loopback over plain HTTP is relayed at its own address
// inside the sandbox; one elsewhere at a port of relayPort's, and the
// variable naming it is pointed there. named are the loopback addresses
// the run's configuration names; serve starts a relay at an address
// inside. It returns the run's meter, nil when the run names no model
// API (its keys are then left as they are).
func (d *Delivery) modelRelays(spec *runner.Spec, taken, named map[string]bool, serve func(addr string, h http.Handler) error) (*runner.Meter, error) {
	apis := modelAPIs(spec)
	if len(apis) == 0 {
		return nil, nil
	}
	swap := map[string]string{}
	for _, kv := range lastValues(spec.Env) {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" || strings.HasPrefix(name, "AMPFLOW_") || !runner.SecretName(name) {
			continue
		}
		placeholder := relayPlaceholder()
		swap[placeholder] = value
		spec.Env = setEnv(spec.Env, name+"="+placeholder)
		if !slices.Contains(spec.Secrets, value) {
			spec.Secrets = append(spec.Secrets, value)
		}
	}
	meter := runner.NewMeter(spec.Model, d.Pricing.Price)
	var transport http.RoundTripper
	if d.Egress != nil {
		transport = d.Egress.RelayTransport
	}
	log := d.logger().With("runner", spec.Runner)
	relayed := map[string]string{} // upstream origin → address inside
	port := relayPort
	for _, api := range apis {
		origin := api.url.Scheme + "://" + api.url.Host
		addr, ok := relayed[origin]
		local := api.url.Scheme == "http" && isLoopback(api.url.Hostname())
		switch {
		case ok:
		case local:
			addr = hostPort(api.url)
		case api.env == "":
			// An API off this machine named in a file: the CLI speaks
			// TLS to it, through the egress proxy, with a placeholder
			// for a key. Name it in a *_BASE_URL variable instead.
			log.Warn("model relay: a model API named in a configuration file is not relayed; name it in the role's env as a *_BASE_URL variable", "api", origin)
			continue
		default:
			for taken[loopbackAddr(port)] || named[loopbackAddr(port)] {
				port++
			}
			addr = loopbackAddr(port)
		}
		if !ok {
			if taken[addr] {
				continue
			}
			taken[addr] = true
			relayed[origin] = addr
			if err := serve(addr, runner.NewRelay(api.url, swap, meter, transport, log)); err != nil {
				return nil, err
			}
		}
		if !local && api.env != "" {
			to := *api.url
			to.Scheme, to.Host = "http", addr
			spec.Env = setEnv(spec.Env, api.env+"="+to.String())
		}
	}
	spec.Stop = meter.Stop()
	return meter, nil
}

func loopbackAddr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// relayPlaceholder is what a run has where a key was: random, so that
// nothing it sends elsewhere means anything.
func relayPlaceholder() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "ampflow-relay-" + hex.EncodeToString(b)
}

// meteredUsage is a run's usage: as its CLI reported it, or as its
// relays counted it when the CLI reported nothing or when the relays
// stopped it at its cap.
func meteredUsage(cli, relay runner.Usage, reason runner.Reason) runner.Usage {
	none := cli.InputTokens == 0 && cli.OutputTokens == 0 && cli.CostUSD == 0
	if none || reason == runner.ReasonMaxCost && relay.CostUSD > cli.CostUSD {
		return relay
	}
	return cli
}

// envSecrets are the values of env's secret-looking variables but
// ampflow's own (the run's credential is its own to show): masked in
// what the run's events record.
func envSecrets(env []string) []string {
	var out []string
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if len(value) >= 6 && !strings.HasPrefix(name, "AMPFLOW_") && runner.SecretName(name) && !slices.Contains(out, value) {
			out = append(out, value)
		}
	}
	return out
}
