package config

import (
	"fmt"

	"github.com/ampflow/ampflow/config/pricing"
)

// Pricing configures what agents' work costs and may cost, for the gate's
// signals and the runners alike (package pricing).
type Pricing struct {
	// Models is USD per million tokens by model; it overrides and adds to
	// the built-in table (pricing.Default).
	Models []pricing.ModelPrice `mapstructure:"models" json:"models"`
	// DefaultPrice prices a runner's tokens of a model the table does not
	// name: an unknown model is never free.
	DefaultPrice pricing.Price `mapstructure:"default_price" json:"default_price"`
	// Budgets cap the spend of an agent or a project per day or month.
	Budgets []pricing.Budget `mapstructure:"budgets" json:"budgets"`
}

func init() {
	defaults["pricing.models"] = []pricing.ModelPrice{}
	// A frontier model's price (pricing.DefaultUnknown).
	defaults["pricing.default_price.input"] = pricing.DefaultUnknown.Input
	defaults["pricing.default_price.output"] = pricing.DefaultUnknown.Output
	defaults["pricing.budgets"] = []pricing.Budget{}
}

func (c Config) validatePricing(ps *problems) {
	p := c.Pricing
	for i, m := range p.Models {
		k := fmt.Sprintf("pricing.models[%d]", i)
		if m.Model == "" {
			ps.add(k+".model", "is required")
		}
		if m.Input < 0 || m.Output < 0 {
			ps.add(k, "prices must not be negative")
		}
	}
	if dp := p.DefaultPrice; dp.Input < 0 || dp.Output < 0 || dp.Input+dp.Output == 0 {
		ps.add("pricing.default_price", "prices a model pricing.models does not name; it must not be negative nor free, not input %v, output %v", dp.Input, dp.Output)
	}
	budgets := map[[3]string]int{}
	for i, b := range p.Budgets {
		k := fmt.Sprintf("pricing.budgets[%d]", i)
		if j, dup := budgets[[3]string{b.Agent, b.Project, b.Period}]; dup {
			ps.add(k, "has the agent, project and period of pricing.budgets[%d]", j)
		}
		budgets[[3]string{b.Agent, b.Project, b.Period}] = i
		if b.Agent == "" && b.Project == "" {
			ps.add(k, "names an agent, a project or both")
		}
		ps.oneOf(k+".period", b.Period, pricing.PeriodDay, pricing.PeriodMonth)
		if b.USD <= 0 {
			ps.add(k+".usd", "must be more than 0")
		}
	}
}
