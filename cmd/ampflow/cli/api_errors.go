package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/ampflow/ampflow/amp"
	"github.com/ampflow/ampflow/amp/task"
)

// transportError explains a request that got no answer.
func (c *apiClient) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cause := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err.Error()
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" || errors.As(err, new(*net.DNSError)) {
		return &task.Error{Code: task.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"cannot reach the ampflow API at %s: is `ampflow dev` or `ampflow worker` running? set %s (%s)", c.base, c.urlSetting(), cause)}
	}
	return &task.Error{Code: task.CodeUnavailable, Err: err,
		Message: fmt.Sprintf("no answer from the ampflow API at %s (%s); check %s", c.base, cause, c.urlSetting())}
}

// answerError turns an error answer back into the *task.Error the server
// wrote, with the same code, adding the setting to change for 401 and 403.
func (c *apiClient) answerError(status int, b []byte) error {
	var eb struct {
		Error struct {
			Code    task.Code        `json:"code"`
			Message string           `json:"message"`
			Fields  []amp.FieldError `json:"fields"`
		} `json:"error"`
	}
	te := &task.Error{}
	var extra map[string]json.RawMessage
	if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
		te.Code, te.Message, te.Fields = eb.Error.Code, eb.Error.Message, eb.Error.Fields
		var all struct {
			Error map[string]json.RawMessage `json:"error"`
		}
		if json.Unmarshal(b, &all) == nil {
			for _, k := range []string{"code", "message", "fields"} {
				delete(all.Error, k)
			}
			if len(all.Error) > 0 {
				extra = all.Error
			}
		}
	} else {
		te.Code = codeOfStatus(status)
		te.Message = fmt.Sprintf("the ampflow API at %s answered %d %s: is %s the ampflow API?",
			c.base, status, http.StatusText(status), c.urlSetting())
	}
	switch status {
	case http.StatusUnauthorized:
		if c.token == "" {
			te.Message = fmt.Sprintf("the ampflow API at %s needs a token: set %s to one of its auth.tokens", c.base, c.tokenSetting())
		} else {
			te.Message = fmt.Sprintf("the ampflow API at %s does not accept the token in %s: set it to one of its auth.tokens", c.base, c.tokenSetting())
		}
	case http.StatusForbidden:
		if c.token == "" {
			break
		}
		te.Message += fmt.Sprintf(" (the role of the token in %s may not do that)", c.tokenSetting())
	}
	if extra != nil {
		return &answerError{te: te, extra: extra}
	}
	return te
}

// answerError is an API error whose body carries more than code, message
// and fields (a LOCK_CONFLICT's holder and retry_after_ms): -o json
// prints them too, as the API answered.
type answerError struct {
	te    *task.Error
	extra map[string]json.RawMessage
}

func (e *answerError) Error() string { return e.te.Error() }
func (e *answerError) Unwrap() error { return e.te }

// codeOfStatus is the code of an error answer without an error body.
func codeOfStatus(status int) task.Code {
	switch status {
	case http.StatusBadRequest:
		return task.CodeInvalid
	case http.StatusUnauthorized:
		return "unauthenticated"
	case http.StatusForbidden:
		return task.CodeForbidden
	case http.StatusNotFound:
		return task.CodeNotFound
	case http.StatusConflict:
		return task.CodeConflict
	case http.StatusTooManyRequests:
		return task.CodeRateLimited
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return task.CodeUnavailable
	}
	return task.CodeInternal
}
