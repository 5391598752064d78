package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ampflow/ampflow/amp"
)

// inputError is input that was read but refused: exit 1, naming each
// failing field. The SSOT error log keeps it when it is local.
type inputError struct {
	what   string // "plan", "subtasks", "message"
	fields []amp.FieldError
	raw    []byte
}

func (e *inputError) Error() string {
	parts := make([]string, len(e.fields))
	for i, f := range e.fields {
		parts[i] = f.String()
	}
	return fmt.Sprintf("invalid %s: %s", e.what, strings.Join(parts, "; "))
}

// toJSON returns b as JSON: as it is when it reads as JSON, converted
// when it is YAML. JSON goes through untouched so that amp sees its exact
// numbers and reports syntax errors at their real offsets.
func toJSON(b []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return b, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("malformed YAML: %w", err)
	}
	if doc.Kind == 0 {
		return nil, errors.New("empty document")
	}
	var buf bytes.Buffer
	if err := writeYAMLAsJSON(&buf, &doc, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeYAMLAsJSON writes n as JSON, keeping key order and repeated keys
// (amp reports those) and the literal text of numbers.
func writeYAMLAsJSON(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 100 {
		return errors.New("YAML nested too deeply")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return errors.New("empty document")
		}
		return writeYAMLAsJSON(buf, n.Content[0], depth+1)
	case yaml.AliasNode:
		return writeYAMLAsJSON(buf, n.Alias, depth+1)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a mapping key must be a plain value", k.Line)
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k.Value)
			buf.WriteByte(':')
			if err := writeYAMLAsJSON(buf, n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeYAMLAsJSON(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(buf, n)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.WriteString(strconv.FormatBool(v))
	case "!!int":
		var v int64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.WriteString(strconv.FormatInt(v, 10))
	case "!!float":
		var v float64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
		}
		if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
			buf.WriteString(n.Value) // the literal, so 60.0 stays a float
		} else {
			buf.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
	default: // strings, timestamps, binary: their text
		writeString(buf, n.Value)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	buf.Write(b)
}

// checkPlan strictly validates a task_dispatch payload by wrapping it in
// an envelope from the coordinator to the executor and parsing that with
// amp; failing fields are named plan.…. taskID may be empty.
func checkPlan(raw []byte, taskID string, now time.Time) (amp.TaskDispatch, error) {
	if taskID == "" {
		taskID = fmt.Sprintf("T-%04d-001", now.Year())
	}
	var probe struct {
		Type    *string         `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(raw, &probe) == nil && probe.Type != nil && probe.Payload != nil {
		return amp.TaskDispatch{}, &inputError{what: "plan", raw: raw, fields: []amp.FieldError{{
			Path: "plan", Problem: "is a whole AMP envelope; give only its task_dispatch payload"}}}
	}
	m, err := amp.Wrap(raw, amp.RoleCoordinator, amp.RoleExecutor, taskID, now, amp.TypeTaskDispatch)
	if err != nil {
		return amp.TaskDispatch{}, renamePayload(err, "plan", "plan", raw)
	}
	return *m.Dispatch(), nil
}

// renamePayload reports amp's errors under payload as errors of name,
// paths prefixed with prefix instead of "payload". Errors elsewhere (the
// envelope the CLI built) are dropped unless nothing else is left.
func renamePayload(err error, name, prefix string, raw []byte) error {
	var ve *amp.ValidationError
	var se *amp.SyntaxError
	switch {
	case errors.As(err, &ve):
		var out []amp.FieldError
		for _, f := range ve.Fields {
			rest, ok := strings.CutPrefix(f.Path, "payload")
			if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[') {
				continue
			}
			path := prefix + rest
			if prefix == "" {
				path = strings.TrimPrefix(rest, ".")
			}
			out = append(out, amp.FieldError{Path: path, Problem: f.Problem})
		}
		if len(out) == 0 {
			out = ve.Fields
		}
		return &inputError{what: name, fields: out, raw: raw}
	case errors.As(err, &se):
		return &inputError{what: name, raw: raw, fields: []amp.FieldError{{
			Path: prefix, Problem: fmt.Sprintf("malformed JSON at byte offset %d: %s", se.Offset, se.Msg)}}}
	}
	return err
}

// checkSubtasks reads a list of subtasks, or {subtasks: [...]}, and
// validates them with amp's task_dispatch rules.
func checkSubtasks(raw []byte, now time.Time) ([]amp.Subtask, error) {
	var se *amp.SyntaxError
	if _, err := amp.Parse(raw); errors.As(err, &se) {
		return nil, renamePayload(err, "subtasks", "subtasks", raw)
	}
	var probe any
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("reading subtasks: %w", err)
	}
	list := raw
	if obj, ok := probe.(map[string]any); ok {
		var wrapped map[string]json.RawMessage
		if err := json.Unmarshal(raw, &wrapped); err != nil {
			return nil, fmt.Errorf("reading subtasks: %w", err)
		}
		var extra []amp.FieldError
		for k := range obj {
			if k != "subtasks" {
				extra = append(extra, amp.FieldError{Path: k, Problem: "unknown field; expected only subtasks"})
			}
		}
		if _, ok := wrapped["subtasks"]; !ok {
			extra = append(extra, amp.FieldError{Path: "subtasks", Problem: "required"})
		}
		if len(extra) > 0 {
			return nil, &inputError{what: "subtasks", fields: extra, raw: raw}
		}
		list = wrapped["subtasks"]
	}
	plan := map[string]any{
		"description": "replan", "repo": "/replan", "branch": "replan",
		"acceptance_criteria": []string{"replan"}, "risk_level": "low",
		"subtasks": json.RawMessage(list),
	}
	b, err := json.Marshal(plan)
	if err != nil {
		return nil, fmt.Errorf("reading subtasks: %w", err)
	}
	m, err := amp.Wrap(b, amp.RoleCoordinator, amp.RoleExecutor, fmt.Sprintf("T-%04d-001", now.Year()), now, amp.TypeTaskDispatch)
	if err != nil {
		return nil, renamePayload(err, "subtasks", "", raw)
	}
	return m.Dispatch().Subtasks, nil
}
