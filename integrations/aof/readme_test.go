package aof

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeAOFRoutesDocumented checks that every route the page "AOF/1
// agents" (docs/aof.md) shows is in the served OpenAPI document.
func TestReadmeAOFRoutesDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "aof.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(readme), "# AOF/1 agents\n")
	if !ok {
		t.Fatal(`docs/aof.md does not start with "# AOF/1 agents"`)
	}
	r := newRig(t)
	_, doc := r.do("GET", "/v1/openapi.json", "")
	paths := doc["paths"].(map[string]any)
	var templates []*regexp.Regexp
	for path, item := range paths {
		for method := range item.(map[string]any) {
			re := regexp.QuoteMeta(strings.ToUpper(method) + " " + path)
			re = regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(re, `[^/ ?"]+`)
			templates = append(templates, regexp.MustCompile("^"+re+"$"))
		}
	}
	// Routes as prose names them (POST /v1/aof/…) and as the curl
	// commands call them (-X POST $API/v1/aof/…; GET without -X).
	var uses []string
	for _, m := range regexp.MustCompile("(GET|POST) (/v1/aof/[^\\s?`]*)").FindAllStringSubmatch(section, -1) {
		uses = append(uses, m[1]+" "+strings.TrimRight(m[2], ".,)"))
	}
	for _, m := range regexp.MustCompile(`curl -sS (?:-X (POST) )?"?\$API(/v1/[^\s?"]*)`).FindAllStringSubmatch(section, -1) {
		method := m[1]
		if method == "" {
			method = "GET"
		}
		uses = append(uses, method+" "+m[2])
	}
	if len(uses) < 7 {
		t.Fatalf("found %d routes in the section: %v", len(uses), uses)
	}
	for _, use := range uses {
		found := false
		for _, re := range templates {
			if re.MatchString(use) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README shows %s, which openapi.json does not document", use)
		}
	}
}
