package amp

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, fails only with the typed
// errors, and that whatever it accepts survives Marshal and Parse again
// unchanged. ParseRecord is held to the same for ACK records.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"spec", "valid", "invalid", "goonly"} {
		for _, b := range readDir(f, dir) {
			f.Add(b)
		}
	}
	for _, c := range allRuleCases() {
		f.Add(c.document(f))
	}
	for _, s := range []string{"", "{", `{"a":1,"a":2}`, "{} {}", "[]", `{"payload":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		checkErrorType(t, err)
		if err == nil {
			out, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("Marshal of accepted message: %v", err)
			}
			again, err := Parse(out)
			if err != nil {
				t.Fatalf("re-parse of %s: %v", out, err)
			}
			if !reflect.DeepEqual(m, again) {
				t.Fatalf("round trip changed the message:\nfirst:  %#v\nsecond: %#v", m, again)
			}
			if err := m.Validate(); err != nil {
				t.Fatalf("Validate of accepted message: %v", err)
			}
		}
		r, err := ParseRecord(b)
		checkErrorType(t, err)
		if err == nil && r.Ack != nil {
			out, _ := json.Marshal(*r.Ack)
			again, err := ParseAck(out)
			if err != nil || !reflect.DeepEqual(*r.Ack, again) {
				t.Fatalf("ACK round trip: %v\n%#v\n%#v", err, *r.Ack, again)
			}
		}
	})
}

func checkErrorType(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	_, isSyntax := errors.AsType[*SyntaxError](err)
	ve, isValidation := errors.AsType[*ValidationError](err)
	if !isSyntax && !isValidation {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	if isValidation && len(ve.Fields) == 0 {
		t.Fatal("ValidationError without fields")
	}
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"task_dispatch", "task_result"} {
		doc, err := os.ReadFile(filepath.Join("testdata", "spec", name+".json"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
