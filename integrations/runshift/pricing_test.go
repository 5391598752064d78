package runshift

import (
	"github.com/ampflow/ampflow/config/pricing"
	"strings"
	"testing"
)

// TestPricingUnknownModels: a model's name is priced whatever its case,
// provider prefix or date; a name the table does not know costs the
// default price, never nothing.
func TestPricingUnknownModels(t *testing.T) {
	p := NewPricing(nil)
	sonnet, _ := p.Cost("claude-sonnet-4-6", 1e6, 1e6)
	for _, name := range []string{"Claude-Sonnet-4-6", " anthropic/claude-sonnet-4-6", "claude-sonnet-4-6@20250514", "claude-sonnet-4-6-20250514", "claude-sonnet-4-6-latest"} {
		if c, ok := p.Cost(name, 1e6, 1e6); !ok || c != sonnet {
			t.Errorf("Cost(%q) = %g, %v; want %g as claude-sonnet-4-6", name, c, ok, sonnet)
		}
	}
	if c, ok := p.Cost("gpt-4o-mini-2024-07-18", 1e6, 0); !ok || c != 0.15 {
		t.Errorf("gpt-4o-mini with a date costs %g, %v", c, ok)
	}
	opus, _ := p.Cost("claude-opus-4-1", 1e6, 1e6) // the dearest input and output of the table
	for _, name := range []string{"", "my-free-model", "CLAUDE"} {
		if c, ok := p.Cost(name, 1e6, 1e6); ok || c != opus {
			t.Errorf("Cost(%q) = %g, %v; want the dearest price %g, not priced", name, c, ok, opus)
		}
	}
	p = NewPricing([]pricing.ModelPrice{{Model: "*", Input: 1, Output: 2}})
	if c, ok := p.Cost("my-free-model", 1e6, 1e6); ok || c != 3 {
		t.Errorf("with a configured default price, an unknown model costs %g, %v; want 3", c, ok)
	}
}

// TestWebhookWithSecretRefused: a signal's webhook_url with a secret in
// its query is refused; the gate would store and show it.
func TestWebhookWithSecretRefused(t *testing.T) {
	allow := Allow([]string{"hooks.example"})
	if p := checkWebhook("https://hooks.example/cb?run=1", allow); p != "" {
		t.Errorf("a plain webhook refused: %s", p)
	}
	if p := checkWebhook("https://hooks.example/cb?token=abc", allow); !strings.Contains(p, "must not carry a secret") {
		t.Errorf("a webhook with ?token= gave %q, want it refused", p)
	}
}

// TestWebhookPrivateNeedsPort: a private or loopback webhook host passes
// only an allow list entry that names it with its port; a public name
// matches with or without one.
func TestWebhookPrivateNeedsPort(t *testing.T) {
	allow := Allow([]string{"127.0.0.1", "10.0.0.5:8443", "[::1]:9000", "localhost", "hooks.example", "*.example.org:8080"})
	cases := []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:9999/cb", false},
		{"http://127.0.0.1/cb", false},
		{"https://10.0.0.5:8443/cb", true},
		{"https://10.0.0.5/cb", false},
		{"http://[::1]:9000/cb", true},
		{"http://[::1]:9001/cb", false},
		{"http://localhost:80/cb", false},
		{"http://169.254.169.254/latest", false},
		{"https://hooks.example/cb", true},
		{"https://hooks.example:8443/cb", true},
		{"http://a.example.org:8080/cb", true},
		{"http://a.example.org/cb", false},
	}
	for _, c := range cases {
		if p := checkWebhook(c.url, allow); (p == "") != c.ok {
			t.Errorf("%s: %q, want allowed %v", c.url, p, c.ok)
		}
	}
}
