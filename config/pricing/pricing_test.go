package pricing

import (
	"math"
	"testing"
)

func TestPrice(t *testing.T) {
	tab := New([]ModelPrice{{Model: "mine/m", Input: 3, Output: 15}, {Model: "gpt-5", Input: 1, Output: 1}}, Price{Input: 10, Output: 20})
	for _, c := range []struct {
		name, model string
		want        float64
		priced      bool
	}{
		{"Listed", "claude-sonnet-4-6", 3 + 15, true},
		{"Dated", "claude-haiku-4-5-20251001", 1 + 5, true},
		{"LongestEntry", "gpt-5.1-codex-max", 1.25 + 10, true},
		{"NotAPrefixOfAnother", "gpt-5-codex", 1.25 + 10, true},
		{"Configured", "mine/m", 3 + 15, true},
		{"ConfiguredOverDefault", "gpt-5", 1 + 1, true},
		{"Unknown", "some-model", 10 + 20, false},
		{"NoModel", "", 10 + 20, false},
		{"DotIsNoDash", "gpt-5.9", 10 + 20, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := tab.Price(c.model, 1e6, 1e6); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("Price(%q) = %g, want %g", c.model, got, c.want)
			}
			if _, ok := tab.Cost(c.model, 1, 1); ok != c.priced {
				t.Errorf("Cost(%q) priced = %v, want %v", c.model, ok, c.priced)
			}
		})
	}
}

func TestDefaultTable(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Default {
		if seen[p.Model] {
			t.Errorf("%s is listed twice", p.Model)
		}
		seen[p.Model] = true
		if p.Input <= 0 || p.Output < p.Input {
			t.Errorf("%s: input %g, output %g: a price is missing or swapped", p.Model, p.Input, p.Output)
		}
	}
	if DefaultUnknown.Input <= 0 || DefaultUnknown.Output <= 0 {
		t.Error("an unknown model must not be free")
	}
}
