package runshift

import (
	"math"
	"regexp"
	"strings"

	"github.com/ampflow/ampflow/config"
)

// DefaultPricing is USD per million tokens, input and output, of common
// models; gate.pricing overrides and adds to it.
var DefaultPricing = []config.GatePrice{
	{Model: "claude-sonnet-4-6", Input: 3.00, Output: 15.00},
	{Model: "claude-haiku-4-5", Input: 0.80, Output: 4.00},
	{Model: "claude-opus-4-6", Input: 15.00, Output: 75.00},
	{Model: "gpt-4o", Input: 2.50, Output: 10.00},
	{Model: "gpt-4o-mini", Input: 0.15, Output: 0.60},
	{Model: "o3", Input: 10.00, Output: 40.00},
	{Model: "gemini-2.5-pro", Input: 1.25, Output: 10.00},
	{Model: "gemini-2.5-flash", Input: 0.15, Output: 0.60},
}

// MismatchRatio is how far a reported cost may differ from the computed
// one before it is flagged.
const MismatchRatio = 0.10

// AnyModel is the model name of the price of every model the table does
// not name (gate.pricing: [{model: "*", …}]).
const AnyModel = "*"

// Pricing prices models, by normalised name.
type Pricing map[string]config.GatePrice

// NewPricing is DefaultPricing with the configured prices over it. A
// model the table does not name costs the AnyModel price when one is
// configured, else the dearest of the table's input and output prices:
// a name the table does not know never makes a signal cheaper.
func NewPricing(configured []config.GatePrice) Pricing {
	p := Pricing{}
	for _, list := range [][]config.GatePrice{DefaultPricing, configured} {
		for _, m := range list {
			p[NormalizeModel(m.Model)] = m
		}
	}
	if _, ok := p[AnyModel]; !ok {
		dearest := config.GatePrice{Model: AnyModel}
		for _, m := range p {
			dearest.Input, dearest.Output = max(dearest.Input, m.Input), max(dearest.Output, m.Output)
		}
		p[AnyModel] = dearest
	}
	return p
}

// Cost computes what tokens of model cost. A model the table does not
// name, after NormalizeModel, costs the AnyModel price and ok is false.
func (p Pricing) Cost(model string, in, out int64) (usd float64, ok bool) {
	m, ok := p[NormalizeModel(model)]
	if !ok {
		m = p[AnyModel]
	}
	return float64(in)/1e6*m.Input + float64(out)/1e6*m.Output, ok
}

// NormalizeModel is the name a model is priced under: lower case, without
// surrounding space, a provider's prefix ("anthropic/", "openai/",
// "models/"), a version after "@" or ":", a date ("-20250514",
// "-2024-07-18") or "-latest" at its end.
func NormalizeModel(model string) string {
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
	m = strings.TrimSuffix(m, "-latest")
	m = dateSuffix.ReplaceAllString(m, "")
	return m
}

var dateSuffix = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)

// Mismatch says whether reported differs from computed by more than
// MismatchRatio of computed (any reported cost when computed is zero).
func Mismatch(reported, computed float64) bool {
	if computed == 0 {
		return reported > 0
	}
	return math.Abs(reported-computed) > MismatchRatio*computed
}
