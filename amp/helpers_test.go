package amp

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ruleCase is one row of the rule tables: a fixture, edits applied to its
// decoded tree, and the exact paths Parse must report (none: valid).
type ruleCase struct {
	name  string
	base  string // a schema name: the fixture is testdata/spec/<base>.json or testdata/valid/ack.json
	edits []edit
	want  []string
	// goOnly marks rules JSON Schema cannot express: the schema accepts the
	// document although Parse refuses it.
	goOnly bool
}

type edit struct {
	path string
	val  any
	del  bool
}

func set(path string, v any) edit { return edit{path: path, val: v} }
func del(path string) edit        { return edit{path: path, del: true} }
func num(s string) json.Number    { return json.Number(s) }
func raw(s string) json.RawMessage {
	return json.RawMessage(s)
}
func paths(p ...string) []string { return p }

func good(name, base string, edits ...edit) ruleCase {
	return ruleCase{name: name, base: base, edits: edits}
}

func bad(name, base string, want []string, edits ...edit) ruleCase {
	return ruleCase{name: name, base: base, edits: edits, want: want}
}

func goOnly(c ruleCase) ruleCase { c.goOnly = true; return c }

func fixturePath(base string) string {
	if base == SchemaAck {
		return filepath.Join("testdata", "valid", "ack.json")
	}
	return filepath.Join("testdata", "spec", base+".json")
}

func loadTree(t testing.TB, base string) any {
	t.Helper()
	b, err := os.ReadFile(fixturePath(base))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", base, err)
	}
	return v
}

var segmentRe = regexp.MustCompile(`([^.\[\]]+)|\[(\d+)\]`)

// apply sets or deletes the value at a path like "payload.subtasks[0].x".
func apply(t testing.TB, tree any, e edit) {
	t.Helper()
	segs := segmentRe.FindAllStringSubmatch(e.path, -1)
	cur := tree
	for i, s := range segs {
		last := i == len(segs)-1
		if s[2] != "" {
			idx, _ := strconv.Atoi(s[2])
			a, isArr := cur.([]any)
			if !isArr || idx >= len(a) {
				t.Fatalf("edit %s: no index %d", e.path, idx)
			}
			if last {
				if e.del {
					t.Fatalf("edit %s: cannot delete an array element", e.path)
				}
				a[idx] = e.val
				return
			}
			cur = a[idx]
			continue
		}
		m, isObj := cur.(map[string]any)
		if !isObj {
			t.Fatalf("edit %s: %q is not inside an object", e.path, s[1])
		}
		if last {
			if e.del {
				delete(m, s[1])
			} else {
				m[s[1]] = e.val
			}
			return
		}
		cur = m[s[1]]
	}
}

// document renders a rule case as JSON bytes.
func (c ruleCase) document(t testing.TB) []byte {
	t.Helper()
	tree := loadTree(t, c.base)
	for _, e := range c.edits {
		apply(t, tree, e)
	}
	b, err := json.Marshal(tree)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return b
}

func parseAs(base string, b []byte) error {
	if base == SchemaAck {
		_, err := ParseAck(b)
		return err
	}
	m, err := Parse(b)
	if err == nil && string(m.Type) != base {
		return errors.New("parsed as " + string(m.Type))
	}
	return err
}

// failingPaths returns the paths of a *ValidationError, failing the test
// for any other error.
func failingPaths(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	ve, isVE := errors.AsType[*ValidationError](err)
	if !isVE {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	var got []string
	for _, f := range ve.Fields {
		if f.Problem == "" {
			t.Errorf("field %s has no problem text", f.Path)
		}
		got = append(got, f.Path)
	}
	return got
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			err := parseAs(c.base, c.document(t))
			got := failingPaths(t, err)
			if !slices.Equal(got, c.want) {
				t.Errorf("failing paths = %q, want %q\n%v", got, c.want, err)
			}
		})
	}
}

func allRuleCases() []ruleCase {
	return slices.Concat(envelopeCases, ackCases, dispatchCases, resultCases, requestCases, verdictCases, escalationCases)
}

func readDir(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus in testdata/%s: %v", dir, err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = b
	}
	return out
}
