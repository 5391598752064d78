package amcp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The page "Risk contracts" (docs/contracts.md) shows only routes the
// served OpenAPI document has, with request bodies the routes take.
func TestReadmeRiskContracts(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "contracts.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(readme), "# Risk contracts\n")
	if !ok {
		t.Fatal(`docs/contracts.md does not start with "# Risk contracts"`)
	}

	h := newHarness(t, 0)
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	h.do(t, "GET", "/v1/openapi.json", "", "").decode(t, &doc)
	documented := func(method, path string) bool {
		for p, item := range doc.Paths {
			re := regexp.MustCompile(`\\\{[A-Za-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/ ]+`)
			if regexp.MustCompile("^"+re+"$").MatchString(path) && item[strings.ToLower(method)] != nil {
				return true
			}
		}
		return false
	}
	curls := regexp.MustCompile(`curl -sS (?:-X (POST) )?http://127\.0\.0\.1:7480(/v1/[^\s"]+)`).FindAllStringSubmatch(section, -1)
	if len(curls) != 3 {
		t.Fatalf("found %d curl examples; want decide, the contract and execute", len(curls))
	}
	for _, c := range curls {
		method := c[1]
		if method == "" {
			method = "GET"
		}
		if !documented(method, c[2]) {
			t.Errorf("the page shows %s %s, which openapi.json does not document", method, c[2])
		}
	}
	for _, u := range regexp.MustCompile("`(GET|POST) (/v1/[^`\\s]+)`").FindAllStringSubmatch(section, -1) {
		if !documented(u[1], u[2]) {
			t.Errorf("the page names %s %s, which openapi.json does not document", u[1], u[2])
		}
	}
	bodies := regexp.MustCompile(`-d '([^']+)'`).FindAllStringSubmatch(section, -1)
	targets := []any{&DecideRequest{}, &ExecuteRequest{}}
	if len(bodies) != len(targets) {
		t.Fatalf("found %d request bodies; want %d", len(bodies), len(targets))
	}
	for i, b := range bodies {
		dec := json.NewDecoder(bytes.NewReader([]byte(b[1])))
		dec.DisallowUnknownFields()
		if err := dec.Decode(targets[i]); err != nil {
			t.Errorf("the page's body %s: %v", b[1], err)
		}
	}
	// The decide example answers what the the page shows, ids and times apart.
	var shown, got DecideResponse
	blocks := regexp.MustCompile("(?s)```json\n(.*?)\n```").FindAllStringSubmatch(section, -1)
	if len(blocks) == 0 {
		t.Fatal("no JSON answers in the section")
	}
	if err := json.Unmarshal([]byte(blocks[0][1]), &shown); err != nil {
		t.Fatalf("README's decide answer: %v", err)
	}
	got = h.decide(t, keyA, bodies[0][1])
	shown.ContractID, shown.GateID, shown.ExpiresAt = got.ContractID, got.GateID, got.ExpiresAt
	a, _ := json.Marshal(shown)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("README's decide answer differs from the served one:\nREADME: %s\nserved: %s", a, b)
	}
	for code := range Codes {
		if !strings.Contains(section, "`"+string(code)+"`") {
			t.Errorf("README's error table lacks %s", code)
		}
	}
}
