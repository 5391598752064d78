package runshift

import (
	"math"

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

// Pricing prices models.
type Pricing map[string]config.GatePrice

// NewPricing is DefaultPricing with the configured prices over it.
func NewPricing(configured []config.GatePrice) Pricing {
	p := Pricing{}
	for _, list := range [][]config.GatePrice{DefaultPricing, configured} {
		for _, m := range list {
			p[m.Model] = m
		}
	}
	return p
}

// Cost computes what tokens of model cost; ok is false for a model not
// priced.
func (p Pricing) Cost(model string, in, out int64) (usd float64, ok bool) {
	m, ok := p[model]
	if !ok {
		return 0, false
	}
	return float64(in)/1e6*m.Input + float64(out)/1e6*m.Output, true
}

// Mismatch says whether reported differs from computed by more than
// MismatchRatio of computed (any reported cost when computed is zero).
func Mismatch(reported, computed float64) bool {
	if computed == 0 {
		return reported > 0
	}
	return math.Abs(reported-computed) > MismatchRatio*computed
}
