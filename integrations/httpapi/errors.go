package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ampflow/ampflow/activities/ssot"
	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// Codes of errors only the HTTP layer produces.
const (
	codeUnauthenticated  task.Code = "unauthenticated"
	codeTooLarge         task.Code = "too_large"
	codeMethodNotAllowed task.Code = "method_not_allowed"
)

// statusOf is the one table from error codes to HTTP statuses.
var statusOf = map[task.Code]int{
	task.CodeInvalid:       http.StatusBadRequest,
	task.CodeNotFound:      http.StatusNotFound,
	task.CodeUnexpected:    http.StatusConflict,
	task.CodeConflict:      http.StatusConflict,
	task.CodeSuspended:     http.StatusLocked,
	task.CodeForbidden:     http.StatusForbidden,
	task.CodeFinished:      http.StatusConflict,
	task.CodeStaleDecision: http.StatusConflict,
	task.CodeDecided:       http.StatusConflict,
	task.CodeClaimed:       http.StatusConflict,
	task.CodeUnavailable:   http.StatusServiceUnavailable,
	task.CodeRateLimited:   http.StatusTooManyRequests,
	task.CodeInputBudget:   http.StatusConflict,
	task.CodeInternal:      http.StatusInternalServerError,

	codeUnauthenticated:  http.StatusUnauthorized,
	codeTooLarge:         http.StatusRequestEntityTooLarge,
	codeMethodNotAllowed: http.StatusMethodNotAllowed,

	codeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	codeMisdirected:          http.StatusMisdirectedRequest,
}

// errorBody is the JSON form of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    task.Code        `json:"code"`
	Message string           `json:"message"`
	Fields  []amp.FieldError `json:"fields"`
}

// asTaskError classifies err; an unclassified error is internal.
func asTaskError(err error) *task.Error {
	var te *task.Error
	if errors.As(err, &te) {
		return te
	}
	// A row changed behind the store's back is refused by name.
	var re *ssot.RowError
	if errors.As(err, &re) {
		return &task.Error{Code: task.CodeInternal, Message: re.Error(), Err: err}
	}
	return &task.Error{Code: task.CodeInternal, Message: "internal error", Err: err}
}

func (s *Server) httpStatus(code task.Code) int {
	if st, ok := s.statusOf[code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// writeError answers with err in the API's error form.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	te := asTaskError(err)
	st := s.httpStatus(te.Code)
	if st >= 500 {
		s.log.Error("HTTP API request failed", "method", r.Method, "path", r.URL.Path, "code", te.Code, "err", err)
	} else {
		s.log.Debug("HTTP API request refused", "method", r.Method, "path", r.URL.Path, "code", te.Code, "err", te.Message)
	}
	writeJSON(w, st, errorBody{Error: errorDetail{Code: te.Code, Message: te.Message, Fields: te.Fields}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal","message":"encoding the response failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// readBody reads the request body up to the server's limit. On a body
// too large it returns what was read along with the error.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return body, task.Errorf(codeTooLarge, "request body exceeds %d bytes", tooLarge.Limit)
	}
	if err != nil {
		return body, &task.Error{Code: task.CodeInvalid, Message: "reading request body: " + err.Error(), Err: err,
			Fields: []amp.FieldError{{Path: amp.RootPath, Problem: "unreadable body"}}}
	}
	return body, nil
}

// decodeStrict decodes exactly one JSON object into v, refusing unknown
// fields and trailing data, with errors naming the field.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return InvalidField(amp.RootPath, "trailing data after the JSON object")
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return InvalidField(amp.RootPath, "empty body; a JSON object is required")
	case errors.As(err, &syn):
		return InvalidField(amp.RootPath, fmt.Sprintf("malformed JSON at byte offset %d: %s", syn.Offset, syn.Error()))
	case errors.As(err, &typ):
		path := typ.Field
		if path == "" {
			path = amp.RootPath
		}
		return InvalidField(path, fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return InvalidField(name, "unknown field")
	}
	return InvalidField(amp.RootPath, err.Error())
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "a number"
}

// InvalidField is the API's error for one field at fault: code invalid
// (HTTP 400), the message "<path>: <problem>", and fields naming it. The
// rooms refuse their input with it.
func InvalidField(path, problem string) *task.Error {
	return FieldError(task.CodeInvalid, path, problem)
}

// FieldError is InvalidField with another code, for a field that is
// well formed but refused: a room's own invalid code, forbidden, conflict.
func FieldError(code task.Code, path, problem string) *task.Error {
	return &task.Error{Code: code, Message: path + ": " + problem,
		Fields: []amp.FieldError{{Path: path, Problem: problem}}}
}
