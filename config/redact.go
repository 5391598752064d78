package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Mask replaces a secret that is set; an unset secret stays empty so that
// a reader can tell the two apart.
const Mask = "[redacted]"

func mask(s string) string {
	if s == "" {
		return ""
	}
	return Mask
}

// Redacted returns a copy of c with every token and secret masked. c is
// left untouched.
func (c Config) Redacted() Config {
	c.Temporal.APIKey = mask(c.Temporal.APIKey)
	c.API.Token = mask(c.API.Token)
	tokens := make([]AuthToken, len(c.Auth.Tokens))
	for i, t := range c.Auth.Tokens {
		t.Token = mask(t.Token)
		tokens[i] = t
	}
	c.Auth.Tokens = tokens
	c.Auth.DecisionKey = mask(c.Auth.DecisionKey)
	c.CI.GitHub.Token = mask(c.CI.GitHub.Token)
	c.Slack.AppToken = mask(c.Slack.AppToken)
	c.Slack.BotToken = mask(c.Slack.BotToken)
	c.Slack.SigningSecret = mask(c.Slack.SigningSecret)
	c.Telegram.Token = mask(c.Telegram.Token)
	c.Telegram.WebhookSecret = mask(c.Telegram.WebhookSecret)
	c.Agents.Executor.WebhookSecret = mask(c.Agents.Executor.WebhookSecret)
	c.Agents.Reviewer.WebhookSecret = mask(c.Agents.Reviewer.WebhookSecret)
	c.Gate.WebhookSecret = mask(c.Gate.WebhookSecret)
	c.Delivery.GitHub.WebhookSecret = mask(c.Delivery.GitHub.WebhookSecret)
	c.SSOT.URL = maskURLPassword(c.SSOT.URL)
	c.Dev.TemporalDB = maskURLPassword(c.Dev.TemporalDB)
	return c
}

// maskURLPassword masks the password of a URL, and the whole of a value
// that does not parse, since it may hold one.
func maskURLPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return mask(raw)
	}
	return u.Redacted()
}

// urlPassword is the password in a URL, or "".
func urlPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// Secrets returns every secret that is set, longest first: what Redacted
// masks, and what output shown to agents or admins must never contain.
func (c Config) Secrets() []string {
	all := []string{
		c.Temporal.APIKey, c.API.Token, c.CI.GitHub.Token,
		c.Slack.AppToken, c.Slack.BotToken, c.Slack.SigningSecret,
		c.Telegram.Token, c.Telegram.WebhookSecret,
		c.Agents.Executor.WebhookSecret, c.Agents.Reviewer.WebhookSecret,
		c.Gate.WebhookSecret, c.Auth.DecisionKey,
		c.Delivery.GitHub.WebhookSecret, c.Delivery.GitHub.Token(),
		urlPassword(c.SSOT.URL),
		urlPassword(c.Dev.TemporalDB),
	}
	for _, t := range c.Auth.Tokens {
		all = append(all, t.Token)
	}
	// The agents' keys and the contract secret are read from the
	// environment when they are used; the variables named hold them.
	for _, a := range c.Gate.Agents {
		all = append(all, os.Getenv(a.KeyEnv))
	}
	all = append(all, c.ContractSecret(nil))
	var out []string
	for _, s := range all {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Settings returns the redacted configuration as a map from each key to
// its value.
func (c Config) Settings() map[string]any {
	out := map[string]any{}
	flatten("", reflect.ValueOf(c.Redacted()), out)
	return out
}

// String renders the redacted configuration, one "key=value" per line in
// key order, so printing a Config never shows a secret.
func (c Config) String() string {
	settings := c.Settings()
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v\n", k, settings[k])
	}
	return b.String()
}

// LogValue implements slog.LogValuer: a logged Config is a group of its
// redacted settings.
func (c Config) LogValue() slog.Value {
	settings := c.Settings()
	attrs := make([]slog.Attr, 0, len(settings))
	for k, v := range settings {
		attrs = append(attrs, slog.Any(k, v))
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
	return slog.GroupValue(attrs...)
}

// flatten walks a struct by its mapstructure tags, storing each leaf under
// its dotted key.
func flatten(prefix string, v reflect.Value, out map[string]any) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		fv := v.Field(i)
		if tag == "-" {
			continue // not a key (Config.File)
		}
		if tag == ",squash" {
			// An embedded section's keys are its parent's.
			flatten(prefix, fv, out)
			continue
		}
		key := prefix + tag
		if fv.Kind() == reflect.Struct && f.Type != durationType {
			flatten(key+".", fv, out)
			continue
		}
		out[key] = fv.Interface()
	}
}
