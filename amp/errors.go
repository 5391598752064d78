package amp

import (
	"errors"
	"fmt"
	"strings"
)

// RootPath is the FieldError path that names the whole document.
const RootPath = "(root)"

// ErrUnknownSchema is returned by Schema for a name SchemaNames does not list.
var ErrUnknownSchema = errors.New("amp: unknown schema")

// SyntaxError reports input that is not a single well-formed JSON value:
// malformed JSON, invalid UTF-8, excessive nesting or trailing data.
type SyntaxError struct {
	// Offset is the byte offset in the input at which the problem was found.
	Offset int64
	// Msg describes the problem.
	Msg string
	// Err is the underlying decoder error, if any.
	Err error
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("amp: malformed JSON at byte offset %d: %s", e.Offset, e.Msg)
}

// Unwrap returns the underlying decoder error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// FieldError is one rule an input breaks, named by its path: a JSON path
// in a document (the one field-error type of the protocol, the task API
// and the configuration, where the path is a setting's key), such as
// "payload.subtasks[0].estimated_lines". Keys that are not plain identifiers
// are quoted in brackets: `payload.ci_status["build.ios"]`.
type FieldError struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

// String renders the error as "path: problem".
func (e FieldError) String() string { return e.Path + ": " + e.Problem }

// ValidationError lists every rule a well-formed JSON document breaks, in a
// deterministic order: fields in protocol order, arrays by index, unknown
// fields sorted by name.
type ValidationError struct {
	Fields []FieldError
}

// Error implements error: one "path: problem" line per field.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// Has reports whether some field error has exactly the given path.
func (e *ValidationError) Has(path string) bool {
	for _, f := range e.Fields {
		if f.Path == path {
			return true
		}
	}
	return false
}
