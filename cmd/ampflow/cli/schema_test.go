package cli

import (
	"encoding/json"
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
