package aof

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ampflow/ampflow/activities/ssot"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// jsonFields lists a struct type's JSON field names, embedded structs
// flattened, and those always written (no omitempty).
func jsonFields(t reflect.Type) (all, always []string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			a, w := jsonFields(f.Type)
			all, always = append(all, a...), append(always, w...)
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		all = append(all, name)
		if !strings.Contains(opts, "omit") {
			always = append(always, name)
		}
	}
	slices.Sort(all)
	slices.Sort(always)
	return all, always
}

// TestOpenAPISchemasMatchGoTypes ties each AOF schema to the Go type it
// describes: the same properties and, for answers, the same required ones.
func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	schemas := Spec().Schemas
	for name, c := range map[string]struct {
		v      any
		answer bool
	}{
		"AOFTask":               {wf.Task{}, true},
		"AOFResult":             {wf.Result{}, true},
		"AOFEvent":              {ssot.AOFEvent{}, true},
		"AOFEventsResponse":     {EventsResponse{}, true},
		"AOFSessionEndResponse": {SessionEndResponse{}, true},
		"AOFCreateRequest":      {CreateRequest{}, false},
		"AOFDispatchRequest":    {DispatchRequest{}, false},
		"AOFHeartbeatRequest":   {wf.HeartbeatInput{}, false},
		"AOFSessionEndRequest":  {SessionEndRequest{}, false},
	} {
		s, ok := schemas[name].(map[string]any)
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		var props []string
		for p := range s["properties"].(map[string]any) {
			props = append(props, p)
		}
		slices.Sort(props)
		all, always := jsonFields(reflect.TypeOf(c.v))
		if !slices.Equal(props, all) {
			t.Errorf("schema %s has properties %v; %T has %v", name, props, c.v, all)
		}
		if !c.answer {
			continue
		}
		req, _ := s["required"].([]string)
		req = slices.Clone(req)
		slices.Sort(req)
		if !slices.Equal(req, always) {
			t.Errorf("schema %s requires %v; %T always writes %v", name, req, c.v, always)
		}
	}
}

// TestOpenAPIRefs checks every $ref of the AOF operations and schemas
// resolves in the served document.
func TestOpenAPIRefs(t *testing.T) {
	r := newRig(t)
	_, doc := r.do("GET", "/v1/openapi.json", "")
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if schemas[strings.TrimPrefix(ref, "#/components/schemas/")] == nil {
					t.Errorf("$ref %s resolves to nothing", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for path, item := range doc["paths"].(map[string]any) {
		if strings.HasPrefix(path, "/v1/aof/") {
			walk(item)
		}
	}
	for name, s := range schemas {
		if strings.HasPrefix(name, "AOF") {
			walk(s)
		}
	}
}
