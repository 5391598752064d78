package runshift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/workflows/gate"
)

// TestReadmeGateSection: the page "Gate any agent action" (docs/gate.md) holds what
// the code does: its routes are in the served OpenAPI document, its
// payload is a valid signal, its callback is the one sent, its pricing
// table is DefaultPricing, and its Python agent is examples/gate_agent.py.
func TestReadmeGateSection(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "gate.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(raw), "# Gate any agent action\n")
	if !ok {
		t.Fatal(`docs/gate.md does not start with "# Gate any agent action"`)
	}

	g := newTestGate(t, nil)
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(g.do("GET", "/v1/openapi.json", adminToken, nil).want(t, 200).body, &doc); err != nil {
		t.Fatal(err)
	}
	var templates []*regexp.Regexp
	for path, item := range doc.Paths {
		for method := range item {
			re := regexp.QuoteMeta(strings.ToUpper(method) + " " + path)
			re = regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(re, `[^/ ]+`)
			templates = append(templates, regexp.MustCompile("^"+re+"$"))
		}
	}
	uses := regexp.MustCompile("(GET|POST) (/(?:v1|amp)/[^\\s?`\\]]*)").FindAllStringSubmatch(section, -1)
	if len(uses) < 5 {
		t.Fatalf("found %d routes in the section", len(uses))
	}
	for _, u := range uses {
		use := u[1] + " " + strings.TrimRight(u[2], ".,)")
		if !slices.ContainsFunc(templates, func(re *regexp.Regexp) bool { return re.MatchString(use) }) {
			t.Errorf("README shows %s, which openapi.json does not document", use)
		}
	}

	payload := regexp.MustCompile(`(?s)-d '(\{.*?\})'`).FindStringSubmatch(section)
	if payload == nil {
		t.Fatal("no curl payload in the section")
	}
	dec := json.NewDecoder(strings.NewReader(payload[1]))
	dec.DisallowUnknownFields()
	var s Signal
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("the README's payload: %v", err)
	}
	if fs := s.Validate(Allow([]string{"hooks.example.com"})); len(fs) > 0 {
		t.Fatalf("the README's payload is refused: %v", fs)
	}
	if c, ok := NewPricing(nil).Cost(s.Model, *s.InputTokens, *s.OutputTokens); !ok || Mismatch(*s.CostUSD, c) || *s.CostUSD != float64(int64(c*1e6+0.5))/1e6 {
		t.Errorf("the README's cost_usd %g is not the priced cost %g", *s.CostUSD, c)
	}

	cb := regexp.MustCompile("(?s)```json\n(\\{.*?\\})\n```").FindStringSubmatch(section)
	if cb == nil {
		t.Fatal("no callback example in the section")
	}
	var shown map[string]any
	if err := json.Unmarshal([]byte(cb[1]), &shown); err != nil {
		t.Fatal(err)
	}
	sent, _ := json.Marshal(gate.Callback{GateID: "g", Status: gate.StatusApproved, RunID: "r", AgentID: "a", ResolvedBy: "b"})
	var want map[string]any
	json.Unmarshal(sent, &want)
	for k := range want {
		if _, ok := shown[k]; !ok {
			t.Errorf("the README's callback lacks %s", k)
		}
	}
	for k := range shown {
		if _, ok := want[k]; !ok {
			t.Errorf("the README's callback shows %s, which is not sent", k)
		}
	}

	for _, p := range DefaultPricing {
		row := fmt.Sprintf("| `%s` | %.2f | %.2f |", p.Model, p.Input, p.Output)
		if !strings.Contains(section, row) {
			t.Errorf("the README's pricing table lacks %q", row)
		}
	}

	agent, err := os.ReadFile(filepath.Join("..", "..", "examples", "gate_agent.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains([]byte(section), append(append([]byte("```python\n"), agent...), "```"...)) {
		t.Error("the README's Python agent is not examples/gate_agent.py, whole")
	}
}
