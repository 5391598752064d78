package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
)

const componentPrefix = "#/components/schemas/"

// StandaloneSchema is the JSON Schema (draft 2020-12) of component root
// of schemas, a system's Spec.Schemas, on its own: every component it
// references, directly or not, is in its $defs, and the references point
// there. A reference to a component schemas does not hold (the API's
// Error, say) is an error.
func StandaloneSchema(schemas map[string]any, root, id string) ([]byte, error) {
	defs := map[string]any{}
	var visit func(name string) error
	var rewrite func(v any) (any, error)
	rewrite = func(v any) (any, error) {
		switch v := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, x := range v {
				if r, ok := x.(string); ok && k == "$ref" && strings.HasPrefix(r, componentPrefix) {
					name := strings.TrimPrefix(r, componentPrefix)
					if err := visit(name); err != nil {
						return nil, err
					}
					out[k] = "#/$defs/" + name
					continue
				}
				if k == "mapping" {
					if m, ok := x.(map[string]any); ok {
						mm := map[string]any{}
						for t, r := range m {
							mm[t] = strings.Replace(fmt.Sprint(r), componentPrefix, "#/$defs/", 1)
						}
						out[k] = mm
						continue
					}
				}
				y, err := rewrite(x)
				if err != nil {
					return nil, err
				}
				out[k] = y
			}
			return out, nil
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				y, err := rewrite(x)
				if err != nil {
					return nil, err
				}
				out[i] = y
			}
			return out, nil
		}
		// Typed slices and maps of the specs ([]string enums) pass
		// through JSON to be walked alike.
		return v, nil
	}
	visit = func(name string) error {
		if _, ok := defs[name]; ok {
			return nil
		}
		s, ok := schemas[name]
		if !ok {
			return fmt.Errorf("schema %s is not defined", name)
		}
		defs[name] = nil
		plain, err := roundTrip(s)
		if err != nil {
			return err
		}
		d, err := rewrite(plain)
		if err != nil {
			return err
		}
		defs[name] = d
		return nil
	}
	plain, err := roundTrip(schemas[root])
	if err != nil {
		return nil, err
	}
	if plain == nil {
		return nil, fmt.Errorf("schema %s is not defined", root)
	}
	top, err := rewrite(plain)
	if err != nil {
		return nil, err
	}
	out := top.(map[string]any)
	out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	if id != "" {
		out["$id"] = id
	}
	if len(defs) > 0 {
		out["$defs"] = defs
	}
	return marshalIndent(out)
}

// roundTrip makes v plain JSON values (map[string]any, []any).
func roundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}
