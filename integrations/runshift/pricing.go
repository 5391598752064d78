package runshift

import (
	"math"

	"github.com/ampflow/ampflow/config/pricing"
)

// DefaultPricing is the built-in table of the core's pricing package;
// pricing.models overrides and adds to it.
var DefaultPricing = pricing.Default

// MismatchRatio is how far a reported cost may differ from the computed
// one before it is flagged.
const MismatchRatio = 0.10

// AnyModel is the model name of the price of every model the table does
// not name (pricing.models: [{model: "*", …}]).
const AnyModel = pricing.AnyModel

// Pricing prices models, by normalised name; Cost is false for a model
// it does not name, and costs it the unknown price.
type Pricing = pricing.Table

// NewPricing is DefaultPricing with the configured prices over it. A
// model the table does not name costs the AnyModel price when one is
// configured, else the dearest of the table's input and output prices:
// a name the table does not know never makes a signal cheaper.
func NewPricing(configured []pricing.ModelPrice) Pricing {
	p := pricing.New(configured, pricing.Price{})
	if p.Unknown == (pricing.Price{}) {
		p.Unknown = p.Dearest()
	}
	return p
}

// NormalizeModel is the name a model is priced under (pricing.Normalize).
func NormalizeModel(model string) string { return pricing.Normalize(model) }

// Mismatch says whether reported differs from computed by more than
// MismatchRatio of computed (any reported cost when computed is zero).
func Mismatch(reported, computed float64) bool {
	if computed == 0 {
		return reported > 0
	}
	return math.Abs(reported-computed) > MismatchRatio*computed
}
