package runshift

import (
	"fmt"
	"regexp"

	"github.com/ampflow/ampflow/config"
)

// Rules are the operator's gate rules, compiled, in order.
type Rules struct{ rules []rule }

type rule struct {
	config.GateRule
	action *regexp.Regexp
}

// Facts are what a rule matches on.
type Facts struct {
	Agent, Project, Model, Status string
	CostUSD                       float64
	Action                        string
}

// CompileRules compiles gate.rules; an error names the rule.
func CompileRules(in []config.GateRule) (Rules, error) {
	out := Rules{rules: make([]rule, len(in))}
	for i, r := range in {
		out.rules[i] = rule{GateRule: r}
		if r.Action != "" {
			re, err := regexp.Compile(r.Action)
			if err != nil {
				return Rules{}, fmt.Errorf("gate.rules[%d].action: %w", i, err)
			}
			out.rules[i].action = re
		}
	}
	return out, nil
}

// Match returns the gate of the first rule that matches f and its index;
// with none, GateDeclared and -1.
func (rs Rules) Match(f Facts) (string, int) {
	for i, r := range rs.rules {
		if (r.Agent == "" || r.Agent == f.Agent) &&
			(r.Project == "" || r.Project == f.Project) &&
			(r.Model == "" || r.Model == f.Model) &&
			(r.Status == "" || r.Status == f.Status) &&
			(r.CostOverUSD == 0 || f.CostUSD > r.CostOverUSD) &&
			(r.action == nil || r.action.MatchString(f.Action)) {
			return r.Gate, i
		}
	}
	return config.GateDeclared, -1
}

// Gated says whether a signal is gated: when the agent declared a gate
// and the rules confirm it (declared), or the rules add one (always); a
// never rule waives it.
func Gated(rule string, declared bool) bool {
	switch rule {
	case config.GateAlways:
		return true
	case config.GateNever:
		return false
	}
	return declared
}
