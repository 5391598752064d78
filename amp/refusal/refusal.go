// Package refusal is how a workflow refuses an update's input: an
// ApplicationError whose type is the error code and whose details hold
// the task.Error itself, so a client reads the code, message and fields
// as the workflow set them, never parsed back from text. The task
// workflow and the decision engine both refuse through it.
package refusal

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// New refuses with a code and a message.
func New(code task.Code, format string, args ...any) error {
	return wrap(task.Errorf(code, format, args...))
}

// Fields refuses invalid input, naming each failing field.
func Fields(fields []amp.FieldError, format string, args ...any) error {
	e := task.Errorf(task.CodeInvalid, format, args...)
	e.Fields = fields
	return wrap(e)
}

// Field refuses invalid input in one field; the message reads "path:
// problem".
func Field(path, format string, args ...any) error {
	f := amp.FieldError{Path: path, Problem: fmt.Sprintf(format, args...)}
	return Fields([]amp.FieldError{f}, "%s", f.String())
}

// Record refuses a record amp could not parse or validate.
func Record(err error) error {
	var ve *amp.ValidationError
	if errors.As(err, &ve) {
		return Fields(ve.Fields, "invalid AMP record: %v", err)
	}
	return New(task.CodeInvalid, "invalid AMP record: %v", err)
}

// Lines is the message of a refusal of several fields: "path: problem"
// joined by "; ".
func Lines(fields []amp.FieldError) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

func wrap(e *task.Error) error {
	return temporal.NewApplicationErrorWithOptions(e.Message, string(e.Code),
		temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{*e}})
}

// Of reads a refusal back from an ApplicationError; false when the error
// carries none (a failure, not a refusal).
func Of(app *temporal.ApplicationError) (*task.Error, bool) {
	if !app.HasDetails() {
		return nil, false
	}
	var e task.Error
	if err := app.Details(&e); err != nil || e.Code == "" {
		return nil, false
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("%s: %s", e.Code, app.Message())
	}
	return &e, true
}
