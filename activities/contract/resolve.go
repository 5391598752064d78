package contract

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIntent is the longest intent, in characters.
const MaxIntent = 512

// Decision is what a resolution decided.
type Decision string

// Decisions.
const (
	// DecisionExecute: one clear match with its parameters complete; a
	// contract is issued.
	DecisionExecute Decision = "EXECUTE"
	// DecisionClarify: two close matches; Question asks which.
	DecisionClarify Decision = "CLARIFY"
	// DecisionInsufficient: one match, Missing names its parameters absent.
	DecisionInsufficient Decision = "INSUFFICIENT"
	// DecisionNoMatch: nothing in the catalog matches; Reason says why.
	DecisionNoMatch Decision = "NO_MATCH"
)

// Request is what an agent asks to do.
type Request struct {
	Intent string
	// Provider, when set, keeps the resolution to that provider's primitives.
	Provider string
	// Parameters are the values the agent gives.
	Parameters map[string]any
	// Handling, when set, is the least handling the caller wants; it may
	// raise the primitive's minimum, never lower it.
	Handling Handling
}

// Resolution is the resolver's answer.
type Resolution struct {
	Decision Decision
	// Primitive is the match (EXECUTE, INSUFFICIENT).
	Primitive *Primitive
	// Candidates are the two close matches of a CLARIFY, best first.
	Candidates []string
	Question   string
	Missing    []string
	Reason     string
	// Score and Risk are set for EXECUTE.
	Score int
	Risk  Risk
}

// IntentTooLong reports whether intent is longer than MaxIntent characters.
func IntentTooLong(intent string) bool { return utf8.RuneCountInString(intent) > MaxIntent }

// Resolve maps an intent to one primitive by keyword scoring: each
// keyword (the primitive's name counts as one) found in the intent as a
// run of whole words adds its number of words. The best candidate wins
// unless the second reaches resolution.clarify_ratio of its score (then
// CLARIFY); ties are broken by catalog order, so the same request always
// resolves the same way.
func (c *Catalog) Resolve(r Request) Resolution {
	intent := words(r.Intent)
	if len(intent) == 0 {
		return Resolution{Decision: DecisionNoMatch, Reason: "the intent holds no words"}
	}
	best, second := -1, -1
	scores := make([]int, len(c.Primitives))
	for i, p := range c.Primitives {
		if r.Provider != "" && p.ProviderOf() != r.Provider {
			continue
		}
		for _, kw := range c.words[i] {
			if containsRun(intent, kw) {
				scores[i] += len(kw)
			}
		}
		switch {
		case scores[i] == 0:
		case best < 0 || scores[i] > scores[best]:
			best, second = i, best
		case second < 0 || scores[i] > scores[second]:
			second = i
		}
	}
	if best < 0 {
		reason := "no primitive of the catalog matches the intent"
		if r.Provider != "" {
			reason = fmt.Sprintf("no primitive of provider %q matches the intent", r.Provider)
		}
		return Resolution{Decision: DecisionNoMatch, Reason: reason}
	}
	if second >= 0 && float64(scores[second]) >= c.Resolution.ClarifyRatio*float64(scores[best]) {
		a, b := c.Primitives[best], c.Primitives[second]
		return Resolution{
			Decision:   DecisionClarify,
			Candidates: []string{a.Name, b.Name},
			Question:   fmt.Sprintf("Do you mean %s (%s) or %s (%s)?", a.Name, a.Description, b.Name, b.Description),
		}
	}
	p := c.Primitives[best]
	var missing []string
	for _, name := range p.Required() {
		if v, ok := r.Parameters[name]; !ok || v == nil || v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return Resolution{Decision: DecisionInsufficient, Primitive: &p, Missing: missing}
	}
	score, risk := c.RiskOf(p, r.Parameters, r.Handling)
	return Resolution{Decision: DecisionExecute, Primitive: &p, Score: score, Risk: risk}
}

// words lowercases s and splits it into runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// containsRun reports whether run occurs in ws as consecutive words.
func containsRun(ws, run []string) bool {
	if len(run) == 0 {
		return false
	}
outer:
	for i := 0; i+len(run) <= len(ws); i++ {
		for j, w := range run {
			if ws[i+j] != w {
				continue outer
			}
		}
		return true
	}
	return false
}
