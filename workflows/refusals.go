package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// refuse refuses an update's input. The refusal reaches the client as an
// ApplicationError whose type is the code and whose details hold the
// task.Error itself, so the client reads the code, message and fields as
// they were set here.
func refuse(code task.Code, format string, args ...any) error {
	return refusal(task.Errorf(code, format, args...))
}

// refuseFields refuses invalid input, naming each failing field.
func refuseFields(fields []amp.FieldError, format string, args ...any) error {
	e := task.Errorf(task.CodeInvalid, format, args...)
	e.Fields = fields
	return refusal(e)
}

// refuseRecord refuses a record amp could not parse or validate.
func refuseRecord(err error) error {
	var ve *amp.ValidationError
	if errors.As(err, &ve) {
		return refuseFields(ve.Fields, "invalid AMP record: %v", err)
	}
	return refuse(task.CodeInvalid, "invalid AMP record: %v", err)
}

func refusal(e *task.Error) error {
	return temporal.NewApplicationErrorWithOptions(e.Message, string(e.Code),
		temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{*e}})
}

// refusalOf reads a refusal back from an ApplicationError; false when the
// error carries none (a failure, not a refusal).
func refusalOf(app *temporal.ApplicationError) (*task.Error, bool) {
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

// fieldLines is the message of a refusal of several fields: "path:
// problem" joined by "; ".
func fieldLines(fields []amp.FieldError) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// refuseField refuses invalid input in one field; the message reads
// "path: problem".
func refuseField(path, format string, args ...any) error {
	f := amp.FieldError{Path: path, Problem: fmt.Sprintf(format, args...)}
	return refuseFields([]amp.FieldError{f}, "%s", f.String())
}
