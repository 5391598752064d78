package workers

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/ampflow/ampflow/config"
)

// servedDoc builds the HTTP API as a worker serves it, every system
// included, and returns its OpenAPI document.
func servedDoc(t *testing.T) map[string]any {
	t.Helper()
	c, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
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
	t.Cleanup(func() { parts.Close() })
	api, _, err := buildAPI(o, parts, nil, &runtime{log: o.Logger}, o.Logger)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// identityTable is the table of docs/agents.md's "Identity per route",
// made from each operation's security.
func identityTable(t *testing.T, doc map[string]any) []string {
	t.Helper()
	type row struct{ path, method, who string }
	var rows []row
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			sec, ok := op.(map[string]any)["security"].([]any)
			if !ok {
				t.Errorf("%s %s states no security", strings.ToUpper(method), path)
				continue
			}
			rows = append(rows, row{path, strings.ToUpper(method), identityOf(sec)})
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return strings.Compare(a.method, b.method)
	})
	lines := []string{"| Route | Identity |", "|---|---|"}
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("| `%s %s` | %s |", r.method, r.path, r.who))
	}
	return lines
}

// identityOf reads an OpenAPI security requirement as the docs say it.
func identityOf(sec []any) string {
	if len(sec) == 0 {
		return "none"
	}
	var out []string
	for _, req := range sec {
		for scheme, scopes := range req.(map[string]any) {
			switch scheme {
			case "agentKey":
				out = append(out, "agent key")
			case "apiToken":
				var roles []string
				for _, r := range scopes.([]any) {
					roles = append(roles, r.(string))
				}
				if len(roles) == 4 {
					out = append(out, "API token, any role")
				} else {
					out = append(out, "API token: "+strings.Join(roles, " or "))
				}
			default:
				out = append(out, scheme)
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// TestIdentityTable checks the table of docs/agents.md against the
// security each operation of the served document states.
func TestIdentityTable(t *testing.T) {
	want := identityTable(t, servedDoc(t))
	b, err := os.ReadFile(filepath.Join("..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Identity per route\n")
	if !ok {
		t.Fatal(`docs/agents.md has no "Identity per route" section`)
	}
	var got []string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "|") {
			got = append(got, l)
		} else if len(got) > 0 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the table of docs/agents.md's \"Identity per route\" is not the OpenAPI document's; it should read:\n%s", strings.Join(want, "\n"))
	}
}
