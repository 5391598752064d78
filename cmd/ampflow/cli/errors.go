package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
	"github.com/ampflow/ampflow/config"
)

// Codes of errors only the command line produces; the others are the
// API's (task.Code).
const (
	codeUsage  task.Code = "usage"  // exit 2: a wrong command line or an unreadable file
	codeFailed task.Code = "failed" // exit 1 with no finer classification
)

// errorJSON is how -o json reports an error on stderr: the HTTP API's
// error body, {"error":{"code","message","fields"}}.
type errorJSON struct {
	Error errorJSONDetail `json:"error"`
}

type errorJSONDetail struct {
	Code    task.Code        `json:"code"`
	Message string           `json:"message"`
	Fields  []amp.FieldError `json:"fields,omitempty"`
	// extra are the API error's other fields, printed beside these.
	extra map[string]json.RawMessage
}

// MarshalJSON prints the detail with its extra fields.
func (d errorJSONDetail) MarshalJSON() ([]byte, error) {
	type plain errorJSONDetail
	b, err := marshalRaw(plain(d))
	if err != nil || len(d.extra) == 0 {
		return b, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range d.extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return marshalRaw(m)
}

// marshalRaw is json.Marshal without escaping <, > and &, as the error
// line prints them.
func marshalRaw(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// errorBody classifies err, which ends Main with exit code exit.
func errorBody(exit int, err error) errorJSON {
	d := errorJSONDetail{Code: codeFailed, Message: strings.ReplaceAll(err.Error(), "\n", "; ")}
	if exit == ExitUsage {
		d.Code = codeUsage
	}
	var ae *answerError
	if errors.As(err, &ae) {
		d.extra = ae.extra
	}
	var te *task.Error
	var ie *inputError
	var ce *config.ValidationError
	switch {
	case errors.As(err, &te):
		d.Code, d.Fields = te.Code, te.Fields
	case errors.As(err, &ie):
		d.Code = task.CodeInvalid
		d.Fields = ie.fields
	case errors.As(err, &ce):
		d.Code = task.CodeInvalid
		d.Fields = ce.Problems
	}
	return errorJSON{Error: d}
}

// writeError prints err on w: one line of JSON with -o json, else
// "ampflow: message".
func (a *App) writeError(w io.Writer, exit int, err error) {
	if a.JSON() {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if enc.Encode(errorBody(exit, err)) == nil {
			return
		}
	}
	fmt.Fprintf(w, "ampflow: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
}
