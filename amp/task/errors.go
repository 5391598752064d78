package task

import (
	"errors"
	"fmt"

	"github.com/ampflow/ampflow/amp"
)

// Code classifies an error that reaches a user; the HTTP API maps each
// code to a status in one table.
type Code string

// Error codes.
const (
	CodeInvalid     Code = "invalid"     // the input is malformed; Fields names what
	CodeNotFound    Code = "not_found"   // no such task or record
	CodeUnexpected  Code = "unexpected"  // valid, but not what the task expects now
	CodeSuspended   Code = "suspended"   // the task waits for an admin
	CodeConflict    Code = "conflict"    // msg_id reused, task id taken, Idempotency-Key reused
	CodeForbidden   Code = "forbidden"   // not allowed for this caller
	CodeFinished    Code = "task_ended"  // the task has ended (done or terminated); the message names which
	CodeUnavailable Code = "unavailable" // Temporal or the worker did not answer
	CodeInternal    Code = "internal"
)

// Decision refusals. CodeStaleDecision: the decision answered is not the
// open one, or its digest is not what the admin was shown (what is being
// approved changed). CodeDecided: the decision was answered already; the
// message says by whom, on which channel and when.
const (
	CodeStaleDecision Code = "stale_decision"
	CodeDecided       Code = "decided"
)

// CodeClaimed refuses an agent's ACK, reply or heartbeat for work that
// another agent holds (the first to ACK the message); the message names
// the holder.
const CodeClaimed Code = "claimed"

// CodeRateLimited refuses input beyond a bound per time window, such as
// an agent's escalations per task per hour.
const CodeRateLimited Code = "rate_limited"

// CodeInputBudget refuses an agent's input to a task that has taken as
// much as one task takes over its life (its history is bounded).
const CodeInputBudget Code = "input_budget_spent"

// Error is an error with a code and a plain message. Fields lists the
// failing field paths of invalid input. A workflow's refusal carries it,
// as JSON, in the details of its ApplicationError, so a client reads the
// code and fields as they were set, never parsed back from text.
type Error struct {
	Code    Code             `json:"code"`
	Message string           `json:"message"`
	Fields  []amp.FieldError `json:"fields,omitempty"`
	Err     error            `json:"-"`
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, CodeInternal for an unclassified one.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
