package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// servedDoc reads the document as the server embeds it.
func servedDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

func TestOpenAPIDocument(t *testing.T) {
	doc := servedDoc(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi = %q, want 3.1.x", v)
	}
	// Every local $ref points at something in the document.
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				if _, ok := pointer(doc, r); !ok {
					t.Errorf("$ref %s resolves to nothing", r)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}

// pointer resolves a "#/a/b" JSON pointer in doc.
func pointer(doc map[string]any, ref string) (any, bool) {
	var cur any = doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func TestOpenAPIServedWithoutToken(t *testing.T) {
	h := newHarness(t, false)
	r := h.do(t, http.MethodGet, "/v1/openapi.json", "", "")
	wantStatus(t, r, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if !bytes.Equal(r.body, OpenAPI()) {
		t.Error("GET /v1/openapi.json does not serve the embedded document")
	}
}

func TestOpenAPICoversRoutes(t *testing.T) {
	h := newHarness(t, false)
	h.srv.Mount("POST /chat/slack", http.NotFoundHandler())
	registered := h.srv.Patterns()
	if len(registered) == 0 {
		t.Fatal("the server lists no routes")
	}
	var documented []string
	for path, item := range servedDoc(t)["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, p := range registered {
		if !slices.Contains(documented, p) {
			t.Errorf("route %s has no entry in openapi.json", p)
		}
	}
	for _, p := range documented {
		if !slices.Contains(registered, p) {
			t.Errorf("openapi.json documents %s, which the server does not register", p)
		}
	}
}

func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	schemas := servedDoc(t)["components"].(map[string]any)["schemas"].(map[string]any)
	_, types := apiSchemas()
	for _, name := range []string{"StartRequest", "StartResponse", "SubmitResponse", "AckRequest", "MessageRequest", "HeartbeatRequest",
		"InboxResponse", "DecisionsResponse", "DecideRequest", "ListResponse", "HistoryResponse", "CancelRequest",
		"ReplanRequest", "State", "Decision", "ErrorDetail", "FieldError"} {
		if types[name] == nil {
			t.Errorf("schema %s is not tied to a Go type", name)
		}
	}
	for name, v := range types {
		s, ok := schemas[name].(map[string]any)
		if !ok {
			t.Errorf("openapi.json has no schema %s", name)
			continue
		}
		var props, wantProps, wantReq []string
		for p := range s["properties"].(map[string]any) {
			props = append(props, p)
		}
		for _, f := range jsonFields(reflect.TypeOf(v)) {
			wantProps = append(wantProps, f.name)
			if !f.omitempty {
				wantReq = append(wantReq, f.name)
			}
		}
		sort.Strings(props)
		sort.Strings(wantProps)
		if !slices.Equal(props, wantProps) {
			t.Errorf("schema %s has properties %v; %T has JSON fields %v", name, props, v, wantProps)
		}
		var req []string
		for _, r := range asList(s["required"]) {
			req = append(req, r.(string))
		}
		sort.Strings(req)
		sort.Strings(wantReq)
		if !slices.Equal(req, wantReq) {
			t.Errorf("schema %s requires %v; %T always writes %v", name, req, v, wantReq)
		}
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// TestOpenAPIErrorCodes checks the document's code table against statusOf.
func TestOpenAPIErrorCodes(t *testing.T) {
	s := servedDoc(t)["components"].(map[string]any)["schemas"].(map[string]any)["ErrorCode"].(map[string]any)
	desc := s["description"].(string)
	for code, st := range statusOf {
		if !slices.Contains(asList(s["enum"]), any(string(code))) {
			t.Errorf("code %s is not in the ErrorCode enum", code)
		}
		if line := "- `" + string(code) + "`: HTTP " + strconv.Itoa(st); !strings.Contains(desc, line) {
			t.Errorf("ErrorCode description lacks %q", line)
		}
	}
}

// TestReadmeRoutesDocumented checks that every route the section "For
// agent authors" of docs/agents.md shows is in the OpenAPI document, which
// that section is written from.
func TestReadmeRoutesDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## For agent authors\n")
	if !ok {
		t.Fatal(`docs/agents.md has no "For agent authors" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var templates []*regexp.Regexp
	paths := servedDoc(t)["paths"].(map[string]any)
	for path, item := range paths {
		for method := range item.(map[string]any) {
			re := regexp.QuoteMeta(strings.ToUpper(method) + " " + path)
			re = regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(re, `[^/ ]+`)
			templates = append(templates, regexp.MustCompile("^"+re+"$"))
		}
	}
	uses := regexp.MustCompile("(GET|POST) (/v1/[^\\s?`\\]]*)").FindAllStringSubmatch(section, -1)
	if len(uses) < 6 {
		t.Fatalf("found %d routes in the section, want the agent loop's", len(uses))
	}
	for _, u := range uses {
		use := u[1] + " " + strings.TrimRight(u[2], ".,)")
		if !slices.ContainsFunc(templates, func(re *regexp.Regexp) bool { return re.MatchString(use) }) {
			t.Errorf("README shows %s, which openapi.json does not document", use)
		}
	}
}
