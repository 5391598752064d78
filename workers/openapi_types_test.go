package workers

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// freeForm are the only objects of the document that may take any keys
// with any values: each is left open by the protocol that owns it, not
// by ampflow. A schema is named by its place: the component and the
// property path inside it.
var freeForm = map[string]string{
	// AMP/1.0 leaves these free-form (amp/DECISIONS.md: unknown keys are
	// refused everywhere but inside them).
	"amp_ack.metadata": "AMP/1.0: metadata is free-form",
	"amp_task_dispatch/$defs/payload.tech_constraints":   "AMP/1.0: tech_constraints is free-form (ampflow reads budget_usd and gate_agents in it)",
	"amp_escalation/$defs/payload.system_state_snapshot": "AMP/1.0: system_state_snapshot is free-form",
	"amp_review_request/$defs/payload.ci_status":         "AMP/1.0: ci_status is free-form (no entry may be \"failed\")",
	"Signal.metadata":                          "runshift's AMP signal: metadata is any JSON object of the agent's",
	"SignalArtifact.content":                   "runshift's AMP signal: an artifact's content is text or any JSON",
	"MeshPayload_agent.chat.metadata":          "RepoMesh: a chat's metadata is the sender's",
	"AmcpParameters{}":                         "AMCP: a parameter's value is any JSON the primitive takes (the catalog names the parameters)",
	"Gate.contract.parameters{}":               "AMCP: a parameter's value is any JSON the primitive takes",
	"DecisionContext.extra{}":                  "a value the deciding system shows the admins as is (a string, number, list or object of its own)",
	"POST /mcp request.params.arguments":       "MCP: a tool's arguments are what its inputSchema (served by tools/list) says",
	"POST /mcp 200.result.tools[].inputSchema": "MCP: a tool's inputSchema is a JSON Schema",
	"ToolCallRequest.input":                    "each agent CLI's own tool input, as the CLI gave it (docs/tools.md names each CLI's tools)",
	"POST /v1/hooks/{cli} request.tool_input":  "each agent CLI's own tool input, as its hook gets it (docs/tools.md names each CLI's tools)",
	"POST /v1/hooks/{cli} 200":                 "the answer in the CLI's own hook format, which differs by CLI (docs/tools.md)",
}

// TestOpenAPIPayloadsTyped walks every request and answer body of the
// document a worker serves, through every reference, and refuses an
// object schema that says nothing of its contents: no properties, no
// schema for additional properties, no oneOf, anyOf, allOf or $ref.
// freeForm lists the exceptions, each with its reason.
func TestOpenAPIPayloadsTyped(t *testing.T) {
	doc := servedDoc(t)
	seen := map[string]bool{}
	found := map[string]bool{}
	var walk func(s any, at string)
	walk = func(v any, at string) {
		s, ok := v.(map[string]any)
		if !ok {
			return
		}
		if r, ok := s["$ref"].(string); ok {
			name := strings.TrimPrefix(r, "#/components/schemas/")
			if seen[name] {
				return
			}
			seen[name] = true
			target, ok := pointer(doc, r)
			if !ok {
				t.Errorf("%s: $ref %s resolves to nothing", at, r)
				return
			}
			walk(target, name)
			return
		}
		if isObject(s) && !described(s) {
			if _, ok := freeForm[at]; ok {
				found[at] = true
			} else {
				t.Errorf("%s is an untyped object (%q): give it properties, an additionalProperties schema, or oneOf/anyOf/allOf, or list it in freeForm with the protocol's reason", at, s["description"])
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(props)) {
				walk(props[k], at+"."+k)
			}
		}
		if defs, ok := s["$defs"].(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(defs)) {
				walk(defs[k], at+"/$defs/"+k)
			}
		}
		walk(s["items"], at+"[]")
		walk(s["additionalProperties"], at+"{}")
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			for _, x := range asList(s[k]) {
				walk(x, at)
			}
		}
		for _, k := range []string{"then", "else", "if", "not"} {
			walk(s[k], at)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(doc["paths"].(map[string]any))) {
		item := doc["paths"].(map[string]any)[path].(map[string]any)
		for _, method := range slices.Sorted(maps.Keys(item)) {
			op := item[method].(map[string]any)
			name := strings.ToUpper(method) + " " + path
			if body, ok := op["requestBody"].(map[string]any); ok {
				for _, c := range body["content"].(map[string]any) {
					walk(c.(map[string]any)["schema"], name+" request")
				}
			}
			for st, r := range op["responses"].(map[string]any) {
				content, _ := r.(map[string]any)["content"].(map[string]any)
				for _, c := range content {
					walk(c.(map[string]any)["schema"], name+" "+st)
				}
			}
		}
	}
	for at := range freeForm {
		if !found[at] {
			t.Errorf("freeForm lists %s, which the document no longer has as a free-form object: remove it", at)
		}
	}
	// The payloads chosen by a type field are chosen so.
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range []string{"AOFEnvelope", "MeshEnvelope", "MeshEvent"} {
		s, _ := schemas[name].(map[string]any)
		d, _ := s["discriminator"].(map[string]any)
		if d["propertyName"] != "type" || len(asList(s["oneOf"])) < 2 {
			t.Errorf("%s is not one of its types' schemas chosen by type: %v", name, s)
		}
	}
	for _, name := range []string{"AOFCompletionReport", "AOFStatusUpdate", "AOFHandoffRequest", "AOFHandoffReply",
		"MeshPayload_task.claimed", "MeshPayload_test.result", "MeshPayload_agent.error", "SignalArtifact", "AmcpParameters"} {
		if schemas[name] == nil {
			t.Errorf("no schema %s", name)
		}
	}
}

// isObject reports whether s is an object schema (type object, alone or
// among others).
func isObject(s map[string]any) bool {
	switch ty := s["type"].(type) {
	case string:
		return ty == "object"
	case []any:
		return slices.Contains(ty, any("object"))
	}
	return false
}

// described reports whether an object schema says what it holds. An
// additionalProperties schema with no type nor structure of its own (any
// value) says nothing.
func described(s map[string]any) bool {
	if p, ok := s["properties"].(map[string]any); ok && len(p) > 0 {
		return true
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf", "$ref", "patternProperties"} {
		if _, ok := s[k]; ok {
			return true
		}
	}
	ap, ok := s["additionalProperties"].(map[string]any)
	if !ok {
		return false
	}
	for _, k := range []string{"type", "$ref", "oneOf", "anyOf", "allOf", "enum", "const", "properties"} {
		if _, ok := ap[k]; ok {
			return true
		}
	}
	return false
}

func asList(v any) []any { l, _ := v.([]any); return l }

// pointer resolves a "#/a/b" JSON pointer in doc.
func pointer(doc map[string]any, ref string) (any, bool) {
	var cur any = doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}
