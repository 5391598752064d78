package amp

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestSpecExamples(t *testing.T) {
	docs := readDir(t, "spec")
	if len(docs) != 5 {
		t.Fatalf("want the spec's five examples, have %d", len(docs))
	}
	check := map[Type]func(t *testing.T, m Message){
		TypeTaskDispatch: func(t *testing.T, m Message) {
			p := m.Dispatch()
			if p.Branch != "feature/watch-breath-v2" || len(p.Subtasks) != 2 || p.Subtasks[0].EstimatedLines != 60 || p.RiskLevel != RiskMedium {
				t.Errorf("dispatch payload = %+v", p)
			}
			if m.AckTimeoutSec == nil || *m.AckTimeoutSec != 300 {
				t.Errorf("ack_timeout_sec = %v", m.AckTimeoutSec)
			}
		},
		TypeTaskResult: func(t *testing.T, m Message) {
			cm := m.Result().SelfAssessment.CriteriaMet
			if len(cm) != 3 || cm[0] == nil || !*cm[0] || cm[1] != nil || cm[2] != nil {
				t.Errorf("criteria_met = %v", cm)
			}
			if m.Result().DiffSummary.LinesAdded != 68 || m.Result().CommitHash != "a3f8d21" {
				t.Errorf("result payload = %+v", m.Result())
			}
		},
		TypeReviewRequest: func(t *testing.T, m Message) {
			if p := m.Request(); p.ReviewScope != ScopeFull || p.RejectCount != 0 || p.CIStatus["xcode_cloud"] != "passed" {
				t.Errorf("request payload = %+v", p)
			}
		},
		TypeReviewVerdict: func(t *testing.T, m Message) {
			p := m.Verdict()
			if p.Decision != DecisionRejected || len(p.Issues) != 1 || p.Issues[0].Line != 87 || p.Confidence != 0.95 || p.CriteriaResults[1].Passed != nil {
				t.Errorf("verdict payload = %+v", p)
			}
		},
		TypeEscalation: func(t *testing.T, m Message) {
			p := m.Escalation()
			if p.Severity != SeverityCritical || !p.AutoSuspended || p.SystemStateSnapshot["task_status"] != "locked" || m.RequiresAck {
				t.Errorf("escalation = %+v", p)
			}
		},
	}
	for name, b := range docs {
		t.Run(name, func(t *testing.T) {
			m, err := Parse(b)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if string(m.Type) != name {
				t.Fatalf("type = %s, want %s", m.Type, name)
			}
			check[m.Type](t, m)
		})
	}
}

func TestValidCorpus(t *testing.T) {
	for name, b := range readDir(t, "valid") {
		t.Run(name, func(t *testing.T) {
			r, err := ParseRecord(b)
			if err != nil {
				t.Fatalf("ParseRecord: %v", err)
			}
			if r.ID() == "" {
				t.Error("record has no id")
			}
		})
	}
}

// TestInvalidCorpus compares each document's full error report with its
// .err golden file (rewrite with -update).
func TestInvalidCorpus(t *testing.T) {
	for _, dir := range []string{"invalid", "goonly"} {
		for name, b := range readDir(t, dir) {
			t.Run(dir+"/"+name, func(t *testing.T) {
				_, err := ParseRecord(b)
				ve, ok := errors.AsType[*ValidationError](err)
				if !ok {
					t.Fatalf("error = %v, want a *ValidationError", err)
				}
				golden := filepath.Join("testdata", dir, name+".err")
				got := ve.Error() + "\n"
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("errors differ from %s:\ngot:\n%swant:\n%s", golden, got, want)
				}
			})
		}
	}
}

var (
	schemasOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

// compiledSchemas compiles the embedded schemas once, asserting formats so
// that date-time is checked as the validator checks it.
func compiledSchemas(t testing.TB) map[string]*jsonschema.Schema {
	t.Helper()
	schemasOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		compiled = map[string]*jsonschema.Schema{}
		for _, name := range SchemaNames() {
			b, err := Schema(name)
			if err != nil {
				compileErr = err
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				compileErr = err
				return
			}
			if err := c.AddResource(schemaIDPrefix+name, doc); err != nil {
				compileErr = err
				return
			}
			if compiled[name], err = c.Compile(schemaIDPrefix + name); err != nil {
				compileErr = err
				return
			}
		}
	})
	if compileErr != nil {
		t.Fatalf("compiling schemas: %v", compileErr)
	}
	return compiled
}

// schemaAccepts validates a record against the schema its ack_of or type
// key selects; a document no schema claims is refused.
func schemaAccepts(t testing.TB, b []byte) bool {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("schema side cannot read the document: %v", err)
	}
	m, isObj := doc.(map[string]any)
	if !isObj {
		return false
	}
	name, _ := m["type"].(string)
	if _, isAck := m["ack_of"]; isAck {
		name = SchemaAck
	}
	sch := compiledSchemas(t)[name]
	return sch != nil && sch.Validate(doc) == nil
}

func TestSchemasAgreeWithValidator(t *testing.T) {
	compiledSchemas(t)
	for _, dir := range []string{"spec", "valid", "invalid", "goonly"} {
		for name, b := range readDir(t, dir) {
			t.Run(dir+"/"+name, func(t *testing.T) {
				_, err := ParseRecord(b)
				goAccepts, schemaOK := err == nil, schemaAccepts(t, b)
				if dir == "goonly" {
					if goAccepts || !schemaOK {
						t.Errorf("go accepts = %v, schema accepts = %v; want a documented go-only refusal", goAccepts, schemaOK)
					}
					return
				}
				if goAccepts != schemaOK {
					t.Errorf("go accepts = %v (%v), schema accepts = %v", goAccepts, err, schemaOK)
				}
			})
		}
	}
	for _, c := range allRuleCases() {
		t.Run("rule/"+c.name, func(t *testing.T) {
			b := c.document(t)
			_, err := ParseRecord(b)
			goAccepts, schemaOK := err == nil, schemaAccepts(t, b)
			if goAccepts != (c.want == nil) {
				t.Fatalf("go accepts = %v, table says %v", goAccepts, c.want == nil)
			}
			if c.goOnly {
				if goAccepts || !schemaOK {
					t.Errorf("go accepts = %v, schema accepts = %v; want a documented go-only refusal", goAccepts, schemaOK)
				}
				return
			}
			if goAccepts != schemaOK {
				t.Errorf("go accepts = %v (%v), schema accepts = %v", goAccepts, err, schemaOK)
			}
		})
	}
}
