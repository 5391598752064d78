// Package runshift is the wire side of the action gate: runshift's AMP
// signal (POST /v1/signals, POST /amp/signal), the agents' keys, the
// operator's rules, pricing and budgets, and the gate listings.
package runshift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	gateacts "github.com/ampflow/ampflow/activities/gate"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/config"
)

// Limits of a signal. Every one is explicit; a signal over any is refused
// naming the field.
const (
	MaxBody           = 256 << 10 // bytes of one request body
	MaxIDLen          = 128       // agent_id, run_id, project_id, task_id, model
	MaxSummary        = 4000      // characters
	MaxProposedAction = 2000      // characters
	MaxArtifacts      = 32        // items
	MaxArtifactBytes  = 64 << 10  // bytes of one artifact's JSON
	MaxMetadataBytes  = 16 << 10  // bytes of metadata's JSON
	MaxURLLen         = 2048      // webhook_url
	MaxTokens         = 1 << 40   // input_tokens, output_tokens
	MaxCostUSD        = 1e6       // cost_usd
)

// Signal statuses.
const (
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// Signal is runshift's AMP payload, v1.0: one JSON object per agent run.
// Pointers tell a missing field from a zero one.
type Signal struct {
	AMPVersion string `json:"amp_version"`
	AgentID    string `json:"agent_id"`
	RunID      string `json:"run_id"`
	ProjectID  string `json:"project_id,omitempty"`
	// TaskID, an ampflow extension, charges the signal's cost to an AMP
	// task.
	TaskID         string            `json:"task_id,omitempty"`
	Status         string            `json:"status"`
	Summary        string            `json:"summary"`
	ProposedAction *string           `json:"proposed_action,omitempty"`
	Artifacts      []json.RawMessage `json:"artifacts,omitempty"`
	Model          string            `json:"model"`
	InputTokens    *int64            `json:"input_tokens"`
	OutputTokens   *int64            `json:"output_tokens"`
	CostUSD        *float64          `json:"cost_usd"`
	GateRequired   *bool             `json:"gate_required"`
	StartedAt      string            `json:"started_at"`
	CompletedAt    string            `json:"completed_at"`
	Metadata       json.RawMessage   `json:"metadata,omitempty"`
	WebhookURL     *string           `json:"webhook_url,omitempty"`
}

// Action is the proposed action, empty when none.
func (s Signal) Action() string {
	if s.ProposedAction == nil {
		return ""
	}
	return *s.ProposedAction
}

// Webhook is the webhook URL, empty when none.
func (s Signal) Webhook() string {
	if s.WebhookURL == nil {
		return ""
	}
	return *s.WebhookURL
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@/-]*$`)

// Validate checks s against runshift's rules and ampflow's limits and
// returns every problem, each naming its field. allowed says whether a
// webhook host and port are in gate.webhook_allow (Allow).
func (s Signal) Validate(allowed AllowFunc) []amp.FieldError {
	var ps []amp.FieldError
	add := func(path, format string, args ...any) {
		ps = append(ps, amp.FieldError{Path: path, Problem: fmt.Sprintf(format, args...)})
	}
	if s.AMPVersion != "1.0" {
		add("amp_version", "must be \"1.0\", not %q", s.AMPVersion)
	}
	id := func(path, v string, required bool) {
		switch {
		case v == "" && required:
			add(path, "required")
		case v == "":
		case len(v) > MaxIDLen:
			add(path, "is %d bytes, at most %d", len(v), MaxIDLen)
		case !idPattern.MatchString(v):
			add(path, "must be letters, digits and . _ : @ / - (starting with a letter or digit), not %q", v)
		}
	}
	id("agent_id", s.AgentID, true)
	id("run_id", s.RunID, true)
	id("project_id", s.ProjectID, false)
	id("task_id", s.TaskID, false)
	switch s.Status {
	case StatusCompleted, StatusFailed, StatusInterrupted:
	case "":
		add("status", "required")
	default:
		add("status", "must be completed, failed or interrupted, not %q", s.Status)
	}
	text := func(path, v string, max int, required bool) {
		n := utf8.RuneCountInString(v)
		switch {
		case !utf8.ValidString(v):
			add(path, "is not UTF-8")
		case strings.TrimSpace(v) == "" && required:
			add(path, "required")
		case n > max:
			add(path, "is %d characters, at most %d", n, max)
		}
	}
	text("summary", s.Summary, MaxSummary, true)
	gate := s.GateRequired != nil && *s.GateRequired
	if s.ProposedAction != nil || gate {
		text("proposed_action", s.Action(), MaxProposedAction, gate)
	}
	if len(s.Artifacts) > MaxArtifacts {
		add("artifacts", "has %d items, at most %d", len(s.Artifacts), MaxArtifacts)
	}
	for i, a := range s.Artifacts {
		if len(a) > MaxArtifactBytes {
			add(fmt.Sprintf("artifacts[%d]", i), "is %d bytes, at most %d", len(a), MaxArtifactBytes)
		}
	}
	id("model", s.Model, true)
	count := func(path string, v *int64) {
		switch {
		case v == nil:
			add(path, "required")
		case *v < 0 || *v > MaxTokens:
			add(path, "must be 0 to %d, not %d", int64(MaxTokens), *v)
		}
	}
	count("input_tokens", s.InputTokens)
	count("output_tokens", s.OutputTokens)
	switch {
	case s.CostUSD == nil:
		add("cost_usd", "required")
	case !(*s.CostUSD >= 0 && *s.CostUSD <= MaxCostUSD):
		add("cost_usd", "must be 0 to %g, not %g", float64(MaxCostUSD), *s.CostUSD)
	}
	if s.GateRequired == nil {
		add("gate_required", "required")
	}
	started, okStart := instant(s.StartedAt)
	if !okStart {
		add("started_at", "must be an ISO 8601 time with a zone (2026-03-06T22:10:38Z), not %q", s.StartedAt)
	}
	completed, okDone := instant(s.CompletedAt)
	if !okDone {
		add("completed_at", "must be an ISO 8601 time with a zone (2026-03-06T22:10:46Z), not %q", s.CompletedAt)
	}
	if okStart && okDone && completed.Before(started) {
		add("completed_at", "is before started_at")
	}
	if m := bytes.TrimSpace(s.Metadata); len(m) > 0 && !bytes.Equal(m, []byte("null")) {
		switch {
		case m[0] != '{':
			add("metadata", "must be an object")
		case len(m) > MaxMetadataBytes:
			add("metadata", "is %d bytes, at most %d", len(m), MaxMetadataBytes)
		case s.Status == StatusFailed:
			var md map[string]json.RawMessage
			if json.Unmarshal(m, &md) == nil {
				for _, k := range []string{"error_code", "error_message"} {
					if v, ok := md[k]; ok && (len(v) == 0 || v[0] != '"') {
						add("metadata."+k, "must be a string")
					}
				}
			}
		}
	}
	if u := s.Webhook(); u != "" {
		if p := checkWebhook(u, allowed); p != "" {
			add("webhook_url", "%s", p)
		}
	}
	return ps
}

// checkWebhook says what is wrong with a webhook URL, or "".
func checkWebhook(raw string, allowed AllowFunc) string {
	if len(raw) > MaxURLLen {
		return fmt.Sprintf("is %d bytes, at most %d", len(raw), MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "must be an absolute http or https URL"
	}
	if u.User != nil {
		return "must not carry credentials"
	}
	if what := config.SecretInURL(raw); what != "" {
		return "must not carry a secret (" + what + "): it is stored and shown with the gate; the callback is signed instead"
	}
	host, port := u.Hostname(), URLPort(u)
	if allowed == nil || !allowed(host, port, PrivateName(host)) {
		if PrivateName(host) {
			return fmt.Sprintf("host %q is a private or loopback address: gate.webhook_allow must name it with its port (%s)", host, net.JoinHostPort(host, port))
		}
		return fmt.Sprintf("host %q is not in gate.webhook_allow", host)
	}
	return ""
}

func instant(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// AllowFunc says whether a callback may go to host and port; private says
// the host is, or resolves to, a private, loopback, link-local or
// unspecified address.
type AllowFunc func(host, port string, private bool) bool

// Allow returns the check of gate.webhook_allow: a host matches a pattern
// equal to it (case-insensitive) or, for "*.example.com", any name under
// example.com; a pattern with a port ("127.0.0.1:9000") matches that port
// only. A private address, or a name that resolves to one, matches only
// a pattern with its port: naming a host is not enough to aim ampflow at
// the services beside it.
func Allow(patterns []string) AllowFunc {
	type pattern struct{ host, port string }
	ps := make([]pattern, len(patterns))
	for i, p := range patterns {
		h, port, err := net.SplitHostPort(p)
		if err != nil {
			h, port = strings.Trim(p, "[]"), ""
		}
		ps[i] = pattern{strings.ToLower(strings.TrimSuffix(h, ".")), port}
	}
	return func(host, port string, private bool) bool {
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		if h == "" {
			return false
		}
		for _, p := range ps {
			if p.port != "" && p.port != port || p.port == "" && private {
				continue
			}
			if suffix, ok := strings.CutPrefix(p.host, "*"); ok {
				if strings.HasSuffix(h, suffix) && len(h) > len(suffix) {
					return true
				}
			} else if h == p.host {
				return true
			}
		}
		return false
	}
}

// URLPort is u's port, or its scheme's.
func URLPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// PrivateName says whether host is, without resolving it, a private
// address: an IP that PrivateAddr holds private, or localhost.
func PrivateName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && gateacts.PrivateAddr(a)
}
