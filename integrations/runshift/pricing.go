package runshift

import (
	"math"

	"github.com/ampflow/ampflow/activities/pricing"
	"github.com/ampflow/ampflow/config"
)

// DefaultPricing is the built-in table of the core's pricing package;
// gate.pricing overrides and adds to it.
var DefaultPricing = pricing.Default

// MismatchRatio is how far a reported cost may differ from the computed
// one before it is flagged.
const MismatchRatio = 0.10

// Pricing prices models; Cost is false for a model it does not name.
type Pricing = pricing.Table

// NewPricing is DefaultPricing with the configured prices over it.
func NewPricing(configured []config.GatePrice) Pricing {
	return pricing.New(configured, config.Price{})
}

// Mismatch says whether reported differs from computed by more than
// MismatchRatio of computed (any reported cost when computed is zero).
func Mismatch(reported, computed float64) bool {
	if computed == 0 {
		return reported > 0
	}
	return math.Abs(reported-computed) > MismatchRatio*computed
}
