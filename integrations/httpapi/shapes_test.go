package httpapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestEmptyShapes marshals the zero value of every type the OpenAPI
// document describes as an answer and checks each list and count in its
// schema: required there, and written as [] or 0, never null or absent.
func TestEmptyShapes(t *testing.T) {
	schemas, types := apiSchemas()
	checked := 0
	for name, v := range types {
		if strings.HasSuffix(name, "Request") {
			continue // what clients send, not what they read
		}
		schema := schemas[name]
		props, _ := schema["properties"].(obj)
		required, _ := schema["required"].([]string)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %s: %v", name, b, err)
		}
		for prop, ps := range props {
			p, _ := ps.(obj)
			want := map[any]string{"array": "[]", "integer": "0"}[p["type"]]
			if want == "" {
				continue
			}
			checked++
			if !slices.Contains(required, prop) {
				t.Errorf("%s.%s (%s) is not required in the schema", name, prop, p["type"])
			}
			if raw, ok := got[prop]; !ok || string(raw) != want {
				t.Errorf("%s.%s of an empty %s is %q, want %s (in %s)", name, prop, name, raw, want, b)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d lists and counts checked: is apiSchemas still read?", checked)
	}
}
