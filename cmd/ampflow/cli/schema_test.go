package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/amp"
)

func TestSchema(t *testing.T) {
	for _, name := range amp.SchemaNames() {
		want, err := amp.Schema(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, output := range []string{"text", "json"} {
			r := run(t, "", nil, nil, "schema", "-o", output, name)
			if r.code != ExitOK || strings.TrimSpace(r.stdout) != strings.TrimSpace(string(want)) || !json.Valid([]byte(r.stdout)) {
				t.Errorf("schema %s -o %s: exit %d, stdout %.60q; want 0 and the embedded schema", name, output, r.code, r.stdout)
			}
		}
	}
	for _, args := range [][]string{{"schema", "task"}, {"schema"}} {
		r := run(t, "", nil, nil, args...)
		if r.code != ExitUsage || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing", args, r.code, r.stdout)
		}
		firstLine, _, _ := strings.Cut(r.stderr, "\n")
		for _, name := range amp.SchemaNames() {
			if !strings.Contains(firstLine, name) {
				t.Errorf("%q: %q does not list %s", args, firstLine, name)
			}
		}
	}
}

// TestSchemaOfSystems: AOF/1, the signal and the mesh's events have
// standalone schemas whose references all resolve inside them.
func TestSchemaOfSystems(t *testing.T) {
	for _, name := range []string{"aof.envelope", "aof.status.update", "aof.completion.report", "signal", "mesh.envelope", "mesh.task.claimed", "mesh.agent.chat"} {
		t.Run(name, func(t *testing.T) {
			r := run(t, "", nil, nil, "schema", name)
			var s map[string]any
			if r.code != ExitOK || json.Unmarshal([]byte(r.stdout), &s) != nil {
				t.Fatalf("exit %d, stdout %.80q", r.code, r.stdout)
			}
			if strings.Contains(r.stdout, "#/components/") {
				t.Error("the schema points outside itself (#/components/…)")
			}
			defs, _ := s["$defs"].(map[string]any)
			for _, m := range regexp.MustCompile(`"#/\$defs/([^"]+)"`).FindAllStringSubmatch(r.stdout, -1) {
				if defs[m[1]] == nil {
					t.Errorf("reference to $defs/%s, which the schema does not define", m[1])
				}
			}
		})
	}
	r := run(t, "", nil, nil, "schema", "aof.status.update")
	if !strings.Contains(r.stdout, `"AOFStatusUpdate"`) || !strings.Contains(r.stdout, `"status.update"`) {
		t.Errorf("aof.status.update does not type its payload: %.200s", r.stdout)
	}
	r = run(t, "", nil, nil, "schema", "aof.nope")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "aof.status.update") || !strings.Contains(r.stderr, "mesh.task.claimed") || !strings.Contains(r.stderr, "signal") {
		t.Errorf("unknown name: exit %d, stderr %q", r.code, r.stderr)
	}
}
