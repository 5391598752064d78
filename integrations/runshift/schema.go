package runshift

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/integrations/httpapi"
)

// SchemaName is the name of the signal's schema for ampflow schema and
// validate.
const SchemaName = "signal"

// JSONSchema is the standalone JSON Schema of runshift's AMP signal, as
// GET /v1/openapi.json has it.
func JSONSchema() ([]byte, error) {
	return httpapi.StandaloneSchema(spec().Schemas, "Signal", "https://ampflow.dev/schemas/signal.json")
}

// ValidateSignal checks one signal as POST /v1/signals does, but for
// what needs the server: the agent's key and projects, webhook_url's
// host in gate.webhook_allow, the task and the budgets. It returns the
// signal or the fields at fault.
func ValidateSignal(body []byte) (Signal, []amp.FieldError) {
	var s Signal
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		msg := err.Error()
		path := amp.RootPath
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			path, msg = strings.Trim(f, `"`), "is not a field of the signal (unknown fields are refused)"
		} else if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
			path, msg = te.Field, "must be "+te.Type.String()
		}
		return s, []amp.FieldError{{Path: path, Problem: msg}}
	}
	return s, s.Validate(func(string, string, bool) bool { return true })
}
