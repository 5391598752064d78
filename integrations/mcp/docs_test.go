package mcp

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocs holds docs/mcp.md to the code: its table names every tool with
// its route, and every JSON example parses.
func TestDocs(t *testing.T) {
	raw, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, tl := range tools() {
		method, path, _ := strings.Cut(tl.pattern, " ")
		row := "| `" + tl.name + "` | `" + method + " " + path + "` |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/mcp.md has no row %s", row)
		}
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| `[A-Z]+ /").FindAllStringSubmatch(doc, -1)
	if len(rows) != len(tools()) {
		t.Errorf("docs/mcp.md lists %d tools, the server has %d", len(rows), len(tools()))
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) < 4 {
		t.Fatalf("%d JSON examples", len(blocks))
	}
	for _, b := range blocks {
		var v any
		if err := json.Unmarshal([]byte(b[1]), &v); err != nil {
			t.Errorf("example does not parse: %v\n%s", err, b[1])
		}
	}
	if !strings.Contains(doc, AgentKeyHeader) || !strings.Contains(doc, "POST "+Path) {
		t.Error("docs/mcp.md does not name the header or the route")
	}
}
