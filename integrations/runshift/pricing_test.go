package runshift

import (
	"strings"
	"testing"

	"github.com/ampflow/ampflow/config"
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
	p = NewPricing([]config.GatePrice{{Model: "*", Input: 1, Output: 2}})
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
