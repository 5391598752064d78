// Package pricing is what agents' work costs and may cost, for the gate's
// signals and the runners alike: model tokens priced in USD by the
// built-in table of current models, the configured prices over it
// (pricing.models) and a default price for a model neither names
// (pricing.default_price), so that nothing a runner spends counts as
// free; and the budgets that cap the spend (pricing.budgets).
package pricing

import "strings"

// ModelPrice is a model's price in USD per million tokens.
type ModelPrice struct {
	Model  string  `mapstructure:"model" json:"model"`
	Input  float64 `mapstructure:"input" json:"input"`
	Output float64 `mapstructure:"output" json:"output"`
}

// Price is USD per million tokens, input and output.
type Price struct {
	Input  float64 `mapstructure:"input" json:"input"`
	Output float64 `mapstructure:"output" json:"output"`
}

// Budget periods.
const (
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// Budget caps spending: of one agent, one project, or one agent in one
// project (both set), per day or month (UTC). The gate's signals and the
// runners' runs spend from it alike.
type Budget struct {
	Agent   string  `mapstructure:"agent" json:"agent"`
	Project string  `mapstructure:"project" json:"project"`
	Period  string  `mapstructure:"period" json:"period"`
	USD     float64 `mapstructure:"usd" json:"usd"`
}

// Default is USD per million tokens, input and output, of current models
// at their vendors' list prices (standard tier, prompts up to 200K
// tokens); pricing.models overrides and adds to it.
var Default = []ModelPrice{
	// Anthropic.
	{Model: "claude-opus-4-6", Input: 5.00, Output: 25.00},
	{Model: "claude-opus-4-5", Input: 5.00, Output: 25.00},
	{Model: "claude-opus-4-1", Input: 15.00, Output: 75.00},
	{Model: "claude-sonnet-4-6", Input: 3.00, Output: 15.00},
	{Model: "claude-sonnet-4-5", Input: 3.00, Output: 15.00},
	{Model: "claude-haiku-4-5", Input: 1.00, Output: 5.00},
	// OpenAI.
	{Model: "gpt-5.5", Input: 5.00, Output: 30.00},
	{Model: "gpt-5.4", Input: 2.50, Output: 15.00},
	{Model: "gpt-5.4-mini", Input: 0.75, Output: 4.50},
	{Model: "gpt-5.3-codex", Input: 1.75, Output: 14.00},
	{Model: "gpt-5.2", Input: 1.75, Output: 14.00},
	{Model: "gpt-5.2-codex", Input: 1.75, Output: 14.00},
	{Model: "gpt-5.1", Input: 1.25, Output: 10.00},
	{Model: "gpt-5.1-codex", Input: 1.25, Output: 10.00},
	{Model: "gpt-5.1-codex-mini", Input: 0.25, Output: 2.00},
	{Model: "gpt-5", Input: 1.25, Output: 10.00},
	{Model: "gpt-5-codex", Input: 1.25, Output: 10.00},
	{Model: "gpt-5-mini", Input: 0.25, Output: 2.00},
	{Model: "gpt-5-nano", Input: 0.05, Output: 0.40},
	{Model: "gpt-4o", Input: 2.50, Output: 10.00},
	{Model: "gpt-4o-mini", Input: 0.15, Output: 0.60},
	{Model: "o3", Input: 2.00, Output: 8.00},
	// Google.
	{Model: "gemini-3.1-pro-preview", Input: 2.00, Output: 12.00},
	{Model: "gemini-3-flash-preview", Input: 0.50, Output: 3.00},
	{Model: "gemini-3.1-flash-lite-preview", Input: 0.25, Output: 1.50},
	{Model: "gemini-2.5-pro", Input: 1.25, Output: 10.00},
	{Model: "gemini-2.5-flash", Input: 0.30, Output: 2.50},
	{Model: "gemini-2.5-flash-lite", Input: 0.10, Output: 0.40},
}

// DefaultUnknown is pricing.default_price's default: what a model the table
// does not name costs, a frontier model's price rather than nothing.
var DefaultUnknown = Price{Input: 5.00, Output: 25.00}

// Table prices models.
type Table struct {
	models map[string]ModelPrice
	// Unknown prices a model the table does not name, in Price.
	Unknown Price
}

// AnyModel is the model name of a configured price for every model the
// table does not name (pricing.models: [{model: "*", …}]); it overrides the
// unknown price New is given.
const AnyModel = "*"

// New is Default with the configured prices over it, by normalised name;
// unknown prices the models neither names, unless a configured AnyModel
// entry does.
func New(configured []ModelPrice, unknown Price) Table {
	t := Table{models: map[string]ModelPrice{}, Unknown: unknown}
	for _, list := range [][]ModelPrice{Default, configured} {
		for _, m := range list {
			if Normalize(m.Model) == AnyModel {
				t.Unknown = Price{Input: m.Input, Output: m.Output}
				continue
			}
			t.models[Normalize(m.Model)] = m
		}
	}
	return t
}

// Dearest is the highest input and the highest output price of the table.
func (t Table) Dearest() Price {
	var d Price
	for _, m := range t.models {
		d.Input, d.Output = max(d.Input, m.Input), max(d.Output, m.Output)
	}
	return d
}

// Normalize is the name a model is priced under: lower case, without a
// provider prefix ("anthropic/"), a version tag ("@20250514", ":latest")
// or a "-latest" suffix. Dated names ("-20251001") are priced as the
// entry they extend, by Lookup.
func Normalize(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if m == AnyModel {
		return m
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.IndexAny(m, "@:"); i >= 0 {
		m = m[:i]
	}
	return strings.TrimSuffix(m, "-latest")
}

// Lookup finds a model's price: its own entry, else the longest entry it
// extends by a dash ("claude-haiku-4-5-20251001" is "claude-haiku-4-5").
func (t Table) Lookup(model string) (ModelPrice, bool) {
	for m := Normalize(model); m != ""; {
		if p, ok := t.models[m]; ok {
			return p, true
		}
		i := strings.LastIndexByte(m, '-')
		if i < 0 {
			break
		}
		m = m[:i]
	}
	return ModelPrice{}, false
}

// Cost computes what tokens of model cost; for a model the table does not
// price, ok is false and the cost is at the Unknown price: a name the
// table does not know never makes tokens free.
func (t Table) Cost(model string, in, out int64) (usd float64, ok bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return USD(ModelPrice{Input: t.Unknown.Input, Output: t.Unknown.Output}, in, out), false
	}
	return USD(p, in, out), true
}

// Price is what tokens of model cost, at the Unknown price for a model
// the table does not name (an empty model included).
func (t Table) Price(model string, in, out int64) float64 {
	usd, _ := t.Cost(model, in, out)
	return usd
}

// USD is what in and out tokens cost at p.
func USD(p ModelPrice, in, out int64) float64 {
	return float64(in)/1e6*p.Input + float64(out)/1e6*p.Output
}
