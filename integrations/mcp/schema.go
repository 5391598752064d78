package mcp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// componentRef is how the OpenAPI document references its schemas.
const componentRef = "#/components/schemas/"

// doc is the part of the served OpenAPI document the tools are built
// from.
type doc struct {
	Paths      map[string]map[string]operation `json:"paths"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	Summary     string      `json:"summary"`
	Description string      `json:"description"`
	Parameters  []parameter `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema any `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
}

type parameter struct {
	Name        string `json:"name"`
	In          string `json:"in"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
	Schema      any    `json:"schema"`
}

func parseDoc(raw []byte) (*doc, error) {
	var d doc
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	return &d, nil
}

// op finds the operation of a "METHOD /path" pattern.
func (d *doc) op(pattern string) (operation, error) {
	method, path, _ := strings.Cut(pattern, " ")
	o, ok := d.Paths[path][strings.ToLower(method)]
	if !ok {
		return operation{}, fmt.Errorf("the OpenAPI document has no operation %s", pattern)
	}
	return o, nil
}

// component is a copy of a named schema, an object with properties.
func (d *doc) component(name string) (map[string]any, error) {
	s, ok := d.Components.Schemas[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the OpenAPI document has no schema %s", name)
	}
	return deepCopy(s).(map[string]any), nil
}

// bodyComponent names the schema of an operation's JSON body: its $ref,
// or with pick the one of a oneOf that pick names.
func (o operation) bodyComponent(pick string) (string, error) {
	if o.RequestBody == nil {
		return "", nil
	}
	s, _ := o.RequestBody.Content["application/json"].Schema.(map[string]any)
	if r, ok := s["$ref"].(string); ok {
		return strings.TrimPrefix(r, componentRef), nil
	}
	if alts, ok := s["oneOf"].([]any); ok && pick != "" {
		for _, a := range alts {
			if r, _ := a.(map[string]any)["$ref"].(string); r == componentRef+pick {
				return pick, nil
			}
		}
	}
	return "", fmt.Errorf("the request body is not one schema (pick one of its oneOf)")
}

// selfContained returns schema with every component it references,
// directly or not, under $defs and the references pointing there, so a
// client reads it alone as a JSON Schema.
func (d *doc) selfContained(schema map[string]any) (map[string]any, error) {
	defs := map[string]any{}
	todo := refsOf(schema)
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if _, done := defs[name]; done {
			continue
		}
		s, ok := d.Components.Schemas[name]
		if !ok {
			return nil, fmt.Errorf("the OpenAPI document has no schema %s", name)
		}
		defs[name] = deepCopy(s)
		todo = append(todo, refsOf(s)...)
	}
	out := rewriteRefs(schema).(map[string]any)
	if len(defs) > 0 {
		all, _ := out["$defs"].(map[string]any)
		if all == nil {
			all = map[string]any{}
		}
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			all[name] = rewriteRefs(defs[name])
		}
		out["$defs"] = all
	}
	return out, nil
}

// refsOf lists the components v references.
func refsOf(v any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok && strings.HasPrefix(r, componentRef) {
				name, _, _ := strings.Cut(strings.TrimPrefix(r, componentRef), "/")
				out = append(out, name)
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// rewriteRefs returns a copy of v whose component references point into
// the tool schema's $defs.
func rewriteRefs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				out[k] = "#/$defs/" + strings.TrimPrefix(s, componentRef)
				continue
			}
			out[k] = rewriteRefs(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = rewriteRefs(e)
		}
		return out
	}
	return v
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
