package task

import (
	"math"
	"testing"
)

func TestCharge(t *testing.T) {
	run := func(total bool, in, out int64, usd float64) UsageInput {
		return UsageInput{SessionTotal: total, InputTokens: in, OutputTokens: out, CostUSD: usd}
	}
	for _, c := range []struct {
		name string
		in   UsageInput
		last *UsageInput
		usd  float64
		tok  Tokens
	}{
		{"PerRun", run(false, 100, 10, 0.5), nil, 0.5, Tokens{100, 10}},
		{"PerRunIgnoresLast", run(false, 100, 10, 0.5), &UsageInput{InputTokens: 50, CostUSD: 0.2}, 0.5, Tokens{100, 10}},
		{"FirstOfSession", run(true, 100, 10, 0.5), nil, 0.5, Tokens{100, 10}},
		{"ResumedSession", run(true, 250, 30, 1.25), &UsageInput{InputTokens: 100, OutputTokens: 10, CostUSD: 0.5}, 0.75, Tokens{150, 20}},
		{"SameTotalAgain", run(true, 100, 10, 0.5), &UsageInput{InputTokens: 100, OutputTokens: 10, CostUSD: 0.5}, 0, Tokens{}},
		{"NewSessionBelowLast", run(true, 40, 5, 0.2), &UsageInput{InputTokens: 100, OutputTokens: 10, CostUSD: 0.5}, 0.2, Tokens{40, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			usd, tok := Charge(c.in, c.last)
			if math.Abs(usd-c.usd) > 1e-9 || tok != c.tok {
				t.Errorf("Charge = $%g %+v, want $%g %+v", usd, tok, c.usd, c.tok)
			}
		})
	}
}

func TestRemaining(t *testing.T) {
	for _, c := range []struct {
		name         string
		capUSD, paid float64
		left         float64
		ok           bool
	}{
		{"NoCap", 0, 99, 0, true},
		{"Within", 5, 1.5, 3.5, true},
		{"Spent", 5, 5, 0, false},
		{"Past", 5, 7, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			left, ok := Remaining(c.capUSD, c.paid)
			if math.Abs(left-c.left) > 1e-9 || ok != c.ok {
				t.Errorf("Remaining(%g, %g) = %g, %v; want %g, %v", c.capUSD, c.paid, left, ok, c.left, c.ok)
			}
		})
	}
}
