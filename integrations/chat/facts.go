package chat

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ampflow/ampflow/amp/decision"
)

// Fact is one line a decision of a subject other than a task shows: a
// label and a plain-text value.
type Fact struct{ Label, Value string }

// ForTask reports whether a decision's context is a task's: the task
// fields, no Extra. Other subjects (a gate) describe themselves in Extra.
func ForTask(c decision.Context) bool { return len(c.Extra) == 0 }

// factOrder is the order of the keys the action gate sets; other keys
// follow, sorted.
var factOrder = []string{"proposed_action", "agent_id", "project_id", "run_id", "model", "cost", "artifacts",
	"reasons", "agent_history", "contract_id", "primitive", "parameters", "risk_level", "minimum_handling"}

// skipFacts are shown elsewhere (the prompt, the description, the footer).
var skipFacts = []string{"summary", "gate_id", "kind"}

// Facts lists a context's Extra as facts, each value clipped to max
// characters: strings as they are, lists of strings one after another,
// anything else as compact JSON.
func Facts(c decision.Context, max int) []Fact {
	keys := make([]string, 0, len(c.Extra))
	for k := range c.Extra {
		if !slices.Contains(skipFacts, k) {
			keys = append(keys, k)
		}
	}
	rank := func(k string) int {
		if i := slices.Index(factOrder, k); i >= 0 {
			return i
		}
		return len(factOrder)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	out := make([]Fact, 0, len(keys))
	for _, k := range keys {
		out = append(out, Fact{Label: factLabel(k), Value: Clip(factValue(c.Extra[k]), max)})
	}
	return out
}

func factLabel(k string) string {
	s := strings.ReplaceAll(strings.TrimSuffix(k, "_id"), "_", " ")
	if strings.HasSuffix(k, "_id") && k != "agent_id" && k != "project_id" {
		s += " id"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func factValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []string:
		return strings.Join(x, "; ")
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				b, _ := json.Marshal(x)
				return string(b)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "; ")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
