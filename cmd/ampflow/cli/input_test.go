package cli

import (
	"strings"
	"testing"
)

func TestToJSON(t *testing.T) {
	tests := []struct {
		name, in, want, wantErr string
	}{
		{"JSONUntouched", ` {"a": 1.0} `, ` {"a": 1.0} `, ""},
		{"Scalars", "a: 1\nb: 60.0\nc: true\nd: ~\ne: '7'\nf: 2026-02-26T14:28:00Z\n",
			`{"a":1,"b":60.0,"c":true,"d":null,"e":"7","f":"2026-02-26T14:28:00Z"}`, ""},
		{"ListAndAlias", "x: &v [1, two]\ny: *v\n", `{"x":[1,"two"],"y":[1,"two"]}`, ""},
		{"RepeatedKeyKept", "a: 1\na: 2\n", `{"a":1,"a":2}`, ""},
		{"Infinity", "a: .inf\n", "", "has no JSON form"},
		{"Malformed", "a: [1, 2\n", "", "malformed YAML"},
		{"Empty", "", "", "empty document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toJSON([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("toJSON = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
