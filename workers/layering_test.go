package workers

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// systems names each system's rooms, one name per layer: its workflow, its
// activities and its wire protocol.
var systems = map[string][]string{
	"gate":     {"workflows/gate", "activities/gate", "integrations/runshift"},
	"contract": {"activities/contract", "integrations/amcp"},
	"lease":    {"workflows/lease", "activities/lease", "integrations/repomesh"},
	"aof":      {"workflows/aof", "activities/aof", "integrations/aof"},
}

// wiring are the only rooms that may join systems together.
var wiring = []string{"workers", "cmd", "test"}

// TestLayering holds the layering the README states: amp imports nothing
// of ours; a system imports the core and no other system; nothing but the
// wiring imports a system.
func TestLayering(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	const module = "github.com/ampflow/ampflow"
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		for _, imp := range f[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				imports[pkg] = append(imports[pkg], rel)
			}
		}
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil
		}
	}
	for _, v := range layeringViolations(imports) {
		t.Error(v)
	}
}

// systemOf names the system a package belongs to, or "".
func systemOf(pkg string) string {
	for name, rooms := range systems {
		for _, room := range rooms {
			if pkg == room || strings.HasPrefix(pkg, room+"/") {
				return name
			}
		}
	}
	return ""
}

func isWiring(pkg string) bool {
	return slices.ContainsFunc(wiring, func(w string) bool { return pkg == w || strings.HasPrefix(pkg, w+"/") })
}

// layeringViolations lists every import that breaks the layering, over a
// module's graph of package → imported packages of the module.
func layeringViolations(imports map[string][]string) []string {
	var bad []string
	for name, rooms := range systems {
		for _, room := range rooms {
			if _, ok := imports[room]; !ok {
				bad = append(bad, "system "+name+": no package "+room)
			}
		}
	}
	pkgs := make([]string, 0, len(imports))
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		sys := systemOf(pkg)
		for _, imp := range imports[pkg] {
			switch other := systemOf(imp); {
			case pkg == "amp" || strings.HasPrefix(pkg, "amp/"):
				if imp != "amp" && !strings.HasPrefix(imp, "amp/") {
					bad = append(bad, pkg+" imports "+imp+": amp imports nothing of ampflow's")
				}
			case isWiring(pkg) || other == "":
			case sys == "":
				bad = append(bad, pkg+" imports "+imp+": only workers/ and cmd/ import a system ("+other+")")
			case other != sys:
				bad = append(bad, pkg+" imports "+imp+": system "+sys+" imports system "+other)
			}
		}
	}
	return bad
}

func TestLayeringViolations(t *testing.T) {
	got := layeringViolations(map[string][]string{
		"amp":                   {"config"},
		"activities":            {"activities/lease"},
		"workflows/gate":        {"workflows/lease", "activities/gate", "workflows"},
		"workers":               {"workflows/gate", "workflows/lease"},
		"activities/gate":       nil,
		"integrations/runshift": nil, "activities/contract": nil, "integrations/amcp": nil,
		"workflows/lease": nil, "activities/lease": nil, "integrations/repomesh": nil,
		"workflows/aof": nil, "activities/aof": nil,
	})
	want := []string{
		"system aof: no package integrations/aof",
		"activities imports activities/lease: only workers/ and cmd/ import a system (lease)",
		"amp imports config: amp imports nothing of ampflow's",
		"workflows/gate imports workflows/lease: system gate imports system lease",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
