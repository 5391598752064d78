package repomesh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// SchemaPrefix starts the names of the mesh's schemas for ampflow schema
// and validate: "mesh.envelope", or "mesh." and an event type.
const SchemaPrefix = "mesh."

// SchemaNames are the names of the mesh's JSON Schemas: the envelope of
// any type, then the envelope of each type POST /v1/events takes.
func SchemaNames() []string {
	out := []string{SchemaPrefix + "envelope"}
	for _, t := range Types() {
		out = append(out, SchemaPrefix+t)
	}
	return out
}

// JSONSchema is the standalone JSON Schema of one of SchemaNames, as
// GET /v1/openapi.json has it.
func JSONSchema(name string) ([]byte, error) {
	typ, ok := strings.CutPrefix(name, SchemaPrefix)
	if !ok {
		return nil, fmt.Errorf("%q is not a mesh schema", name)
	}
	root := "MeshEnvelope"
	if typ != "envelope" {
		root = "MeshEnvelope_" + typ
	}
	return httpapi.StandaloneSchema(spec().Schemas, root, "https://ampflow.dev/schemas/"+name+".json")
}

// ValidateEvent checks one event envelope as POST /v1/events does, but
// for what needs the server: who the caller is, ids taken, claims. It
// returns the envelope or the fields at fault.
func ValidateEvent(body []byte) (Envelope, []amp.FieldError) {
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		path, msg := amp.RootPath, err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			path, msg = strings.Trim(f, `"`), "is not a field of the envelope"
		}
		return env, []amp.FieldError{{Path: path, Problem: msg}}
	}
	_, errs := check(env, time.Now())
	return env, errs
}
