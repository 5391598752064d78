// Package aof speaks AOF/1 on ampflow's HTTP API: it detects and
// validates the protocol's envelopes and payloads (a pure part, this file
// and payloads.go) and serves the AOF routes that hand valid messages to
// the AOF task workflows (workflows/aof).
package aof

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ampflow/ampflow/amp"
	wf "github.com/ampflow/ampflow/workflows/aof"
)

// Prefix introduces an envelope in a message's text.
const Prefix = "AOF/1 "

// Rejection is why a message is not taken, as the document logs it:
// protocol.message.rejected with a reason, or protocol.message.unknown
// with the type.
type Rejection struct {
	// Event is wf.EventRejected or wf.EventUnknown.
	Event string
	// Reason is one of the document's reasons; empty for an unknown type.
	Reason string
	// Type is the unknown message type.
	Type string
	// TaskID and Actor are the envelope's taskId and fromAgent when they
	// could be read.
	TaskID, Actor string
	// Fields names what failed.
	Fields []amp.FieldError
}

// Error says why, naming the fields at fault.
func (r *Rejection) Error() string {
	if r.Event == wf.EventUnknown {
		return "unknown message type " + r.Type
	}
	if len(r.Fields) == 0 {
		return r.Reason
	}
	parts := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		parts[i] = f.String()
	}
	return r.Reason + ": " + strings.Join(parts, "; ")
}

// Payload is the event payload of the rejection.
func (r *Rejection) Payload() map[string]any {
	if r.Event == wf.EventUnknown {
		return map[string]any{"type": r.Type}
	}
	p := map[string]any{"reason": r.Reason}
	if len(r.Fields) > 0 {
		p["errors"] = r.Error()
	}
	return p
}

func reject(reason string, fields ...amp.FieldError) *Rejection {
	return &Rejection{Event: wf.EventRejected, Reason: reason, Fields: fields}
}

func field(path, format string, args ...any) amp.FieldError {
	return amp.FieldError{Path: path, Problem: fmt.Sprintf(format, args...)}
}

// Detect reads a message as the document's router does, in its order: a
// parsed object with protocol "aof"; else a received message
// {"content": "<text>"} whose text is the envelope as JSON, or "AOF/1 "
// followed by it. It returns the valid message or the rejection.
func Detect(body []byte) (wf.Message, *Rejection) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return wf.Message{}, reject(wf.ReasonInvalidJSON, field(amp.RootPath, "the body is not a JSON object"))
	}
	if _, ok := obj["protocol"]; !ok {
		if raw, ok := obj["content"]; ok {
			var text string
			if err := json.Unmarshal(raw, &text); err != nil {
				return wf.Message{}, reject(wf.ReasonInvalidEnvelope, field("content", "must be a string"))
			}
			return detectText(text)
		}
	}
	return Parse(obj)
}

// detectText reads a received message's text: JSON first, then the
// AOF/1 prefix.
func detectText(text string) (wf.Message, *Rejection) {
	t := strings.TrimSpace(text)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(t), &obj); err == nil && obj != nil {
		return Parse(obj)
	}
	rest, ok := strings.CutPrefix(strings.TrimLeft(text, " \t\r\n"), Prefix)
	if !ok {
		return wf.Message{}, reject(wf.ReasonInvalidJSON, field("content", "is neither JSON nor %q followed by JSON", Prefix))
	}
	if err := json.Unmarshal([]byte(rest), &obj); err != nil || obj == nil {
		return wf.Message{}, reject(wf.ReasonInvalidJSON, field("content", "the text after %q is not a JSON object", Prefix))
	}
	return Parse(obj)
}

// Parse validates an envelope object and its payload.
func Parse(obj map[string]json.RawMessage) (wf.Message, *Rejection) {
	var fs []amp.FieldError
	var m wf.Message
	if s, err := str(obj, "protocol"); err != nil {
		fs = append(fs, field("protocol", "%s", err))
	} else if s != "aof" {
		fs = append(fs, field("protocol", "must be \"aof\", got %q", s))
	}
	if raw, ok := obj["version"]; !ok {
		fs = append(fs, field("version", "required"))
	} else if string(bytes.TrimSpace(raw)) != "1" {
		fs = append(fs, field("version", "must be 1, got %s", raw))
	}
	var err error
	if m.Type, err = str(obj, "type"); err != nil {
		fs = append(fs, field("type", "%s", err))
	}
	if m.TaskID, err = taskID(obj, "taskId"); err != nil {
		fs = append(fs, field("taskId", "%s", err))
	}
	for _, k := range []string{"fromAgent", "toAgent"} {
		v, err := nonEmpty(obj, k)
		if err != nil {
			fs = append(fs, field(k, "%s", err))
		}
		if k == "fromAgent" {
			m.FromAgent = v
		} else {
			m.ToAgent = v
		}
	}
	if m.SentAt, err = datetime(obj, "sentAt"); err != nil {
		fs = append(fs, field("sentAt", "%s", err))
	}
	payload, perr := object(obj, "payload")
	if perr != nil {
		fs = append(fs, field("payload", "%s", perr))
	} else if n := len(obj["payload"]); n > MaxPayload {
		fs = append(fs, field("payload", "%d bytes of JSON: at most %d", n, MaxPayload))
	}
	for _, f := range []struct{ k, v string }{{"fromAgent", m.FromAgent}, {"toAgent", m.ToAgent}} {
		if len(f.v) > MaxName {
			fs = append(fs, field(f.k, "%d bytes: at most %d", len(f.v), MaxName))
		}
	}
	if len(fs) > 0 {
		r := reject(wf.ReasonInvalidEnvelope, fs...)
		r.TaskID, r.Actor = m.TaskID, m.FromAgent
		return wf.Message{}, r
	}
	if !slices.Contains(wf.MessageTypes(), m.Type) {
		return wf.Message{}, &Rejection{Event: wf.EventUnknown, Type: m.Type, TaskID: m.TaskID, Actor: m.FromAgent}
	}
	if r := parsePayload(&m, payload); r != nil {
		r.TaskID, r.Actor = m.TaskID, m.FromAgent
		return wf.Message{}, r
	}
	return m, nil
}

// PayloadTaskID returns the taskId a payload names, for the mismatch
// check; empty when the type's payload has none.
func PayloadTaskID(m wf.Message) string {
	switch {
	case m.Status != nil:
		return m.Status.TaskID
	case m.Handoff != nil:
		return m.Handoff.TaskID
	case m.Reply != nil:
		return m.Reply.TaskID
	}
	return ""
}

// Field readers: each returns a problem naming what is wrong.

type problem string

func (p problem) Error() string { return string(p) }

const errRequired = problem("required")

func str(obj map[string]json.RawMessage, k string) (string, error) {
	raw, ok := obj[k]
	if !ok || string(raw) == "null" {
		return "", errRequired
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", problem("must be a string")
	}
	return s, nil
}

func optStr(obj map[string]json.RawMessage, k string) (string, error) {
	if raw, ok := obj[k]; !ok || string(raw) == "null" {
		return "", nil
	}
	return str(obj, k)
}

func nonEmpty(obj map[string]json.RawMessage, k string) (string, error) {
	s, err := str(obj, k)
	if err == nil && strings.TrimSpace(s) == "" {
		return "", problem("must not be empty")
	}
	return s, err
}

func taskID(obj map[string]json.RawMessage, k string) (string, error) {
	s, err := str(obj, k)
	if err != nil {
		return "", err
	}
	if !wf.ValidTaskID(s) {
		return s, problem(fmt.Sprintf("%q does not match TASK-YYYY-MM-DD-NNN", s))
	}
	return s, nil
}

func datetime(obj map[string]json.RawMessage, k string) (time.Time, error) {
	s, err := str(obj, k)
	if err != nil {
		return time.Time{}, err
	}
	t, perr := time.Parse(time.RFC3339Nano, s)
	if perr != nil {
		return time.Time{}, problem(fmt.Sprintf("%q is not an ISO 8601 datetime", s))
	}
	return t, nil
}

func object(obj map[string]json.RawMessage, k string) (map[string]json.RawMessage, error) {
	raw, ok := obj[k]
	if !ok || string(raw) == "null" {
		return nil, errRequired
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, problem("must be an object")
	}
	return o, nil
}

// strings reads an optional list of strings; absent is empty.
func stringList(obj map[string]json.RawMessage, k string) ([]string, error) {
	raw, ok := obj[k]
	if !ok || string(raw) == "null" {
		return []string{}, nil
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, problem("must be a list of strings")
	}
	if l == nil {
		l = []string{}
	}
	return l, nil
}
