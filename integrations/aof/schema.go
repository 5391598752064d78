package aof

import (
	"fmt"
	"strings"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/httpapi"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// SchemaPrefix starts the names of AOF/1's schemas for ampflow schema
// and validate: "aof.envelope", or "aof." and a message type.
const SchemaPrefix = "aof."

// SchemaNames are the names of AOF/1's JSON Schemas: the envelope of
// any type, then the envelope of each type.
func SchemaNames() []string {
	out := []string{SchemaPrefix + "envelope"}
	for _, pt := range payloadTypes {
		out = append(out, SchemaPrefix+pt.typ)
	}
	return out
}

// JSONSchema is the standalone JSON Schema of one of SchemaNames, as
// GET /v1/openapi.json has it.
func JSONSchema(name string) ([]byte, error) {
	typ, ok := strings.CutPrefix(name, SchemaPrefix)
	if !ok {
		return nil, fmt.Errorf("%q is not an AOF/1 schema", name)
	}
	root := "AOFEnvelope"
	if typ != "envelope" {
		root = "AOFEnvelope_" + typ
	}
	return httpapi.StandaloneSchema(Spec().Schemas, root, "https://ampflow.dev/schemas/"+name+".json")
}

// Validate checks one AOF/1 message as POST /v1/aof/messages does: the
// envelope object, or a received message {"content": text}. It returns
// the message or the fields at fault.
func Validate(body []byte) (wf.Message, []amp.FieldError) {
	m, rej := Detect(body)
	if rej == nil {
		return m, nil
	}
	if len(rej.Fields) > 0 {
		return m, rej.Fields
	}
	if rej.Event == wf.EventUnknown {
		var types []string
		for _, pt := range payloadTypes {
			types = append(types, pt.typ)
		}
		return m, []amp.FieldError{{Path: "type", Problem: fmt.Sprintf("%q is not an AOF/1 message type: %s", rej.Type, strings.Join(types, ", "))}}
	}
	return m, []amp.FieldError{{Path: amp.RootPath, Problem: rej.Error()}}
}
