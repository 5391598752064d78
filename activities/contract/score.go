package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// OverridePolicy is the one override policy: handling may be raised, never
// lowered.
const OverridePolicy = "escalation_only"

// Risk is a contract's governance profile.
type Risk struct {
	Level           string   `json:"level"`
	MinimumHandling Handling `json:"minimumHandling"`
	// Reasoning lists what made the score and the handling: each signal
	// set, each compound rule ("compound:<name>"), each multiplier
	// ("multiplier:<name>(<factor>x)") and each escalation
	// ("escalation:<by>(<handling>)").
	Reasoning      []string `json:"reasoning"`
	OverridePolicy string   `json:"overridePolicy"`
}

// Score is a primitive's risk score (0 to MaxScore) and what made it, in
// the catalog's order: signals by weight order of scoring.weights' names,
// then compounds, then multipliers.
func (c *Catalog) Score(p Primitive) (int, []string) {
	s := c.Scoring
	reasoning := []string{}
	sum := 0
	for _, sig := range sortedKeys(p.Signals) {
		if p.Signals[sig] {
			sum += s.Weights[sig]
			reasoning = append(reasoning, sig)
		}
	}
	for _, cp := range s.Compounds {
		all := true
		for _, sig := range cp.When {
			all = all && p.Signals[sig]
		}
		if all {
			sum += cp.Add
			reasoning = append(reasoning, "compound:"+cp.Name)
		}
	}
	score := float64(sum)
	for _, m := range s.Multipliers {
		if p.Signals[m.When] {
			score *= m.Factor
			reasoning = append(reasoning, fmt.Sprintf("multiplier:%s(%sx)", m.Name, strconv.FormatFloat(m.Factor, 'f', -1, 64)))
		}
	}
	return min(int(math.Round(score)), MaxScore), reasoning
}

// LevelOf is the level a score falls in: the last whose Min it reaches.
func (c *Catalog) LevelOf(score int) Level {
	lv := c.Scoring.Levels[0]
	for _, l := range c.Scoring.Levels {
		if score >= l.Min {
			lv = l
		}
	}
	return lv
}

// RiskOf is the risk of running p with params: the level of its score,
// raised by every escalation of the catalog that matches and then by the
// caller's requested handling, if higher. Nothing lowers the level's
// minimum handling.
func (c *Catalog) RiskOf(p Primitive, params map[string]any, requested Handling) (int, Risk) {
	score, reasoning := c.Score(p)
	lv := c.LevelOf(score)
	r := Risk{Level: lv.Level, MinimumHandling: lv.MinimumHandling, Reasoning: reasoning, OverridePolicy: OverridePolicy}
	for i, e := range c.Escalations {
		if e.matches(p.Name, params) {
			by := fmt.Sprintf("rule[%d]", i)
			if e.Reason != "" {
				by += " " + e.Reason
			}
			r.escalate(e.MinimumHandling, by)
		}
	}
	if requested != "" {
		r.escalate(requested, "caller")
	}
	return score, r
}

// escalate raises the minimum handling to h when h is stricter; a lower
// h changes nothing.
func (r *Risk) escalate(h Handling, by string) {
	if h.Rank() > r.MinimumHandling.Rank() {
		r.MinimumHandling = h
		r.Reasoning = append(r.Reasoning, fmt.Sprintf("escalation:%s(%s)", by, h))
	}
}

func (e Escalation) matches(name string, params map[string]any) bool {
	if prefix, ok := strings.CutSuffix(e.Primitive, "*"); ok {
		if !strings.HasPrefix(name, prefix) {
			return false
		}
	} else if e.Primitive != name {
		return false
	}
	for k, want := range e.Parameters {
		v, ok := params[k]
		if !ok || normal(text(v)) != normal(want) {
			return false
		}
	}
	return true
}

// normal is a value as escalations compare it: NFKC, case folded, without
// format characters (zero-width spaces, direction marks) or surrounding
// space, so "Production", "production " and a full-width "ｐroduction"
// match a rule's "production" as the system they name would.
func normal(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, norm.NFKC.String(s))
	return strings.TrimSpace(cases.Fold().String(s))
}

// text is a parameter's value as text: a string as it is, anything else
// in its JSON form.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return string(canonical(v))
}
