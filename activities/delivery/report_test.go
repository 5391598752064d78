package delivery

import (
	"strings"
	"testing"
)

// TestSelfAssessment: a readable report gives each criterion its value;
// any other final message gives every criterion null with a note that
// says what was wrong with it.
func TestSelfAssessment(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []any // true, false or nil per criterion
		note       string
	}{
		{"Read", `Done. {"criteria_met": [true, false], "notes": ["n"], "summary": "s"}`, []any{true, false}, "n"},
		{"NoJSON", "Done, go test passes.", []any{nil, nil}, "ends with no JSON object"},
		{"Count", `Done. {"criteria_met": [true], "summary": "s"}`, []any{nil, nil}, "criteria_met has 1 values for 2 criteria"},
		{"Shape", `Done. {"criteria_met": "all"}`, []any{nil, nil}, "its final JSON object is not the report"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sa := selfAssessment(c.text, 2)
			if len(sa.CriteriaMet) != len(c.want) {
				t.Fatalf("criteria_met = %v", sa.CriteriaMet)
			}
			for i, w := range c.want {
				got := sa.CriteriaMet[i]
				if w == nil && got != nil || w != nil && (got == nil || *got != w.(bool)) {
					t.Errorf("criteria_met[%d] = %v; want %v", i, got, w)
				}
			}
			if len(sa.Notes) == 0 || !strings.Contains(sa.Notes[0], c.note) {
				t.Errorf("notes = %q; want %q", sa.Notes, c.note)
			}
		})
	}
}
