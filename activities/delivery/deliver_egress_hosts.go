package delivery

import (
	"encoding/json"
	"net"
	"net/url"
	"os"
	"slices"

	"github.com/ampflow/ampflow/activities/runner"
)

// ModelHosts are the hosts each runner's CLI reaches its vendor's model
// API at, which its runs may reach without sandbox.network.allow naming
// them. An ACP agent's are read from its run instead (acpModelHosts).
var ModelHosts = map[string][]string{
	runner.Claude:   {"api.anthropic.com"},
	runner.Codex:    {"api.openai.com", "chatgpt.com"},
	runner.Gemini:   {"generativelanguage.googleapis.com", "oauth2.googleapis.com"},
	runner.OpenCode: {"api.anthropic.com", "api.openai.com", "generativelanguage.googleapis.com", "openrouter.ai"},
}

// BackgroundHosts are, by runner, hosts its CLI reaches on its own,
// beside the model API and whatever the agent does (Codex syncs its
// plugins from github.com and api.github.com at start; Gemini CLI logs usage to
// play.googleapis.com): refused without asking anyone, so an admin is
// not asked for what no agent chose. sandbox.network.allow lets a run
// reach one after all.
var BackgroundHosts = map[string][]string{
	runner.Codex:  {"github.com", "*.github.com", "ab.chatgpt.com"},
	runner.Gemini: {"play.googleapis.com"},
}

// acpVendors are the model APIs an ACP agent's env points it at: a base
// URL names the endpoint (a proxy, a gateway), else the vendor's key
// means its own API.
var acpVendors = []struct {
	baseURL, key string
	hosts        []string
}{
	{"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", ModelHosts[runner.Claude]},
	{"GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", ModelHosts[runner.Gemini]},
	{"OPENAI_BASE_URL", "OPENAI_API_KEY", []string{"api.openai.com"}},
}

// modelHosts are the model API hosts a run reaches without asking: its
// runner's, or for an ACP agent, which may be any CLI on any vendor's
// API, acpModelHosts.
func modelHosts(spec *runner.Spec) []string {
	if spec.Runner != runner.ACP {
		return ModelHosts[spec.Runner]
	}
	return acpModelHosts(spec)
}

// acpModelHosts are what an ACP run is configured to reach its model at:
// by acpVendors, and the providers' baseURL in an OpenCode config given
// in OPENCODE_CONFIG_CONTENT or in an OPENCODE_CONFIG file the run cannot
// write (one it writes could name any host for its next run). A base URL
// is host:port, its scheme's port when it names none; a loopback one is
// the run's own: a model relay's or a forwarded endpoint (deliver_net.go,
// which points a *_BASE_URL off the machine at its relay before the
// proxy asks for these), not the proxy's to reach.
func acpModelHosts(spec *runner.Spec) []string {
	var hosts, urls []string
	for _, v := range acpVendors {
		if u, ok := lookupEnv(spec.Env, v.baseURL); ok && u != "" {
			urls = append(urls, u)
		} else if k, ok := lookupEnv(spec.Env, v.key); ok && k != "" {
			hosts = append(hosts, v.hosts...)
		}
	}
	if c, ok := lookupEnv(spec.Env, "OPENCODE_CONFIG_CONTENT"); ok {
		urls = append(urls, openCodeBaseURLs([]byte(c))...)
	}
	if p, ok := lookupEnv(spec.Env, "OPENCODE_CONFIG"); ok && p != "" && (spec.Sandbox == nil || !writable(p, spec)) {
		if b, err := os.ReadFile(p); err == nil {
			urls = append(urls, openCodeBaseURLs(b)...)
		}
	}
	for _, u := range urls {
		if h := hostOf(u); h != "" {
			hosts = append(hosts, h)
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// hostOf is a base URL's host:port, or "" for a loopback URL or one that
// does not parse.
func hostOf(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return ""
	}
	host, port := u.Hostname(), u.Port()
	if isLoopback(host) {
		return ""
	}
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(host, port)
}

// openCodeBaseURLs are the baseURL options of an OpenCode config's
// providers; a config that is not JSON (OpenCode also reads JSONC)
// gives none, and its host must be in sandbox.network.allow.
func openCodeBaseURLs(config []byte) []string {
	var c struct {
		Provider map[string]struct {
			Options struct {
				BaseURL string `json:"baseURL"`
			} `json:"options"`
		} `json:"provider"`
	}
	if json.Unmarshal(config, &c) != nil {
		return nil
	}
	var out []string
	for _, p := range c.Provider {
		if p.Options.BaseURL != "" {
			out = append(out, p.Options.BaseURL)
		}
	}
	return out
}
