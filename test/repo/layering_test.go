package repo

import (
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ampflow/ampflow"

// folders is the order of the top-level folders (docs/architecture.md):
// a package imports packages of its own folder or of folders before it,
// never after.
var folders = []string{"amp", "config", "activities", "workflows", "integrations", "workers", "cmd", "test"}

// libraries are the plain libraries: they import nothing of ampflow's but
// amp/ and other libraries, and no Temporal SDK, so any layer may use them.
var libraries = []string{
	"activities/ssot", "activities/runner", "activities/github", "activities/notify", "activities/gitsafe",
	"activities/toolhook", "config/toolpolicy", "config/pricing",
}

// systems names each system's rooms, one name per layer: its workflow, its
// activities and its wire protocol or HTTP routes.
var systems = map[string][]string{
	// The gate and its risk contracts: contracts take the gate's keys and
	// configuration, and a contract that needs approval is a gate.
	"gate":       {"workflows/gate", "activities/gate", "integrations/runshift", "activities/contract", "integrations/amcp"},
	"lease":      {"workflows/lease", "activities/lease", "integrations/repomesh"},
	"aof":        {"workflows/aof", "activities/aof", "integrations/aof"},
	"toolcalls":  {"integrations/toolcalls"},
	"mcp":        {"integrations/mcp"},
	"githubhook": {"integrations/githubhook"},
	"fleet":      {"integrations/fleet"},
	"goals":      {"workflows/goal", "activities/goal", "integrations/goals"},
}

// forbidden are imports the folder order allows and docs/architecture.md
// rules out: the decision engine takes a Checker, not the activities; the
// channels read notices and record kinds, not the task's activities.
var forbidden = map[string][]string{
	"workflows/decide":       {"activities"},
	"integrations/chat":      {"activities"},
	"integrations/slack":     {"activities"},
	"integrations/telegram":  {"activities"},
	"integrations/httpapi":   {"activities"},
	"integrations/dashboard": {"activities"},
}

// wiring are the only folders that may join systems together.
var wiring = []string{"workers", "cmd", "test"}

// TestLayering holds the layering docs/architecture.md states over every
// package of the module: imports go down the folder order; amp imports
// nothing outside amp/; a library imports only amp/ and no Temporal SDK; a
// system imports no other system; nothing but the wiring imports a system.
func TestLayering(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed to list the module's imports:", err)
	}
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		imports[pkg] = []string{}
		for _, imp := range f[1:] {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				imports[pkg] = append(imports[pkg], rel)
			} else if strings.HasPrefix(imp, "go.temporal.io/") {
				imports[pkg] = append(imports[pkg], imp)
			}
		}
	}
	if len(imports) < 40 {
		t.Fatalf("go list named %d packages; the module has more", len(imports))
	}
	for _, v := range layeringViolations(imports) {
		t.Error(v)
	}
}

// in says whether pkg is room or inside it.
func in(pkg, room string) bool { return pkg == room || strings.HasPrefix(pkg, room+"/") }

// systemOf names the system a package belongs to, or "".
func systemOf(pkg string) string {
	for name, rooms := range systems {
		if slices.ContainsFunc(rooms, func(r string) bool { return in(pkg, r) }) {
			return name
		}
	}
	return ""
}

// isLibrary says whether pkg is one of the libraries or inside one.
func isLibrary(pkg string) bool {
	return slices.ContainsFunc(libraries, func(l string) bool { return in(pkg, l) })
}

// folderOf is pkg's place in folders, or -1.
func folderOf(pkg string) int {
	top, _, _ := strings.Cut(pkg, "/")
	return slices.Index(folders, top)
}

// layeringViolations lists every import that breaks the layering, over a
// module's graph of package → imported packages (of the module, relative
// to it, and of the Temporal SDK, in full).
func layeringViolations(imports map[string][]string) []string {
	var bad []string
	for _, rooms := range [][]string{libraries, slices.Concat(slices.Collect(maps.Values(systems))...)} {
		for _, room := range rooms {
			if _, ok := imports[room]; !ok {
				bad = append(bad, "no package "+room)
			}
		}
	}
	pkgs := slices.Sorted(maps.Keys(imports))
	for _, pkg := range pkgs {
		if pkg != "" && folderOf(pkg) < 0 {
			bad = append(bad, pkg+": not in a folder of the order "+strings.Join(folders, " < "))
			continue
		}
		lib := isLibrary(pkg)
		sys := systemOf(pkg)
		for _, imp := range imports[pkg] {
			if strings.HasPrefix(imp, "go.temporal.io/") {
				if lib {
					bad = append(bad, pkg+" imports "+imp+": a library imports no Temporal SDK")
				}
				continue
			}
			switch other := systemOf(imp); {
			case slices.Contains(forbidden[pkg], imp):
				bad = append(bad, pkg+" imports "+imp+": docs/architecture.md rules it out")
			case folderOf(imp) > folderOf(pkg):
				bad = append(bad, fmt.Sprintf("%s imports %s: %s/ comes after %s/ in the folder order", pkg, imp, folders[folderOf(imp)], folders[folderOf(pkg)]))
			case in(pkg, "amp") && !in(imp, "amp"):
				bad = append(bad, pkg+" imports "+imp+": amp imports nothing of ampflow's outside amp/")
			case lib && !in(imp, "amp") && !isLibrary(imp):
				bad = append(bad, pkg+" imports "+imp+": a library imports nothing of ampflow's but amp/ and libraries")
			case slices.ContainsFunc(wiring, func(w string) bool { return in(pkg, w) }) || other == "":
			case sys == "":
				bad = append(bad, pkg+" imports "+imp+": only workers/, cmd/ and test/ import a system ("+other+")")
			case other != sys:
				bad = append(bad, pkg+" imports "+imp+": system "+sys+" imports system "+other)
			}
		}
	}
	return bad
}

func TestLayeringViolations(t *testing.T) {
	graph := map[string][]string{
		"amp":                   {"config"},
		"config":                {"amp"},
		"activities":            {"activities/lease", "workflows/lease"},
		"activities/ssot":       {"amp", "config", "activities/gitsafe", "go.temporal.io/sdk/workflow"},
		"workflows/gate":        {"workflows/lease", "activities/gate", "workflows"},
		"workers":               {"workflows/gate", "workflows/lease"},
		"tools/gen":             nil,
		"activities/gate":       nil,
		"integrations/runshift": nil, "activities/contract": nil, "integrations/amcp": nil,
		"workflows/lease": nil, "activities/lease": nil, "integrations/repomesh": nil,
		"workflows/aof": nil, "activities/aof": nil,
		"integrations/toolcalls": nil, "integrations/mcp": {"integrations/toolcalls"}, "integrations/dashboard": {"activities", "activities/notify"}, "integrations/githubhook": nil,
		"integrations/fleet": nil,
		"workflows/goal":     nil, "activities/goal": nil, "integrations/goals": nil,
		"activities/runner": nil, "activities/github": nil, "activities/notify": nil, "activities/gitsafe": nil, "activities/toolhook": nil, "config/toolpolicy": nil, "config/pricing": nil,
	}
	got := layeringViolations(graph)
	want := []string{
		"activities imports activities/lease: only workers/, cmd/ and test/ import a system (lease)",
		"activities imports workflows/lease: workflows/ comes after activities/ in the folder order",
		"activities/ssot imports config: a library imports nothing of ampflow's but amp/ and libraries",
		"activities/ssot imports go.temporal.io/sdk/workflow: a library imports no Temporal SDK",
		"amp imports config: config/ comes after amp/ in the folder order",
		"integrations/dashboard imports activities: docs/architecture.md rules it out",
		"integrations/mcp imports integrations/toolcalls: system mcp imports system toolcalls",
		"no package integrations/aof",
		"tools/gen: not in a folder of the order amp < config < activities < workflows < integrations < workers < cmd < test",
		"workflows/gate imports workflows/lease: system gate imports system lease",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
