package workers

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/config"
)

// TestAPIDocumented builds the HTTP API as a worker serves it, every
// system included, and checks its OpenAPI document against it: each route
// has an operation, each operation a route, and each reference a target.
func TestAPIDocumented(t *testing.T) {
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.SSOT.URL = filepath.Join(cfg.DataDir, "ampflow.db")
	cfg.Admins = config.AdminsNamed("ana")
	o := Options{Config: cfg, Temporal: c, Logger: slog.New(slog.DiscardHandler),
		ContractSecretFile: filepath.Join(cfg.DataDir, "contract.secret"), DecisionKeyFile: filepath.Join(cfg.DataDir, DecisionKeyFile)}
	parts, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	defer parts.Close()
	api, dash, err := buildAPI(o, parts, nil, &runtime{log: o.Logger}, o.Logger)
	if err != nil {
		t.Fatal(err)
	}
	if !dash {
		t.Error("the dashboard is not mounted with the default configuration")
	}
	raw, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			if r, _ := op.(map[string]any)["responses"].(map[string]any); len(r) == 0 {
				t.Errorf("%s %s lists no responses", strings.ToUpper(method), path)
			}
		}
	}
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			switch method {
			case "post", "put", "patch", "delete":
			default:
				continue
			}
			r, _ := op.(map[string]any)["responses"].(map[string]any)
			tooMany, _ := r["429"].(map[string]any)
			if h, _ := tooMany["headers"].(map[string]any); h["Retry-After"] == nil {
				t.Errorf("%s %s, a writing route, lists no 429 with Retry-After (http.rate)", strings.ToUpper(method), path)
			}
		}
	}
	routes := api.Patterns()
	for _, want := range []string{"POST /v1/signals", "POST /v1/decide", "POST /v1/leases", "POST /v1/events", "POST /v1/aof/messages"} {
		if !slices.Contains(routes, want) {
			t.Errorf("the API has no route %s", want)
		}
	}
	for _, p := range routes {
		if !slices.Contains(documented, p) {
			t.Errorf("route %s has no operation in the OpenAPI document", p)
		}
	}
	for _, p := range documented {
		if !slices.Contains(routes, p) {
			t.Errorf("the OpenAPI document has %s, which the API does not serve", p)
		}
	}
	var refs func(v any)
	refs = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok && !resolves(doc, r) {
				t.Errorf("reference %s has no target", r)
			}
			for _, x := range v {
				refs(x)
			}
		case []any:
			for _, x := range v {
				refs(x)
			}
		}
	}
	refs(doc)
}

// resolves reports whether ref, a local JSON pointer, names a part of doc.
func resolves(doc map[string]any, ref string) bool {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var cur any = doc
	for _, part := range strings.Split(p, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}
