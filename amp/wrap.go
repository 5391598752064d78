package amp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// AgentTypes are the types an agent sends as a bare payload and has its
// envelope built (ampflow send --type, POST /v1/messages short form).
func AgentTypes() []Type { return []Type{TypeTaskResult, TypeReviewVerdict, TypeEscalation} }

// Wrap builds an envelope with NewMessage around the JSON payload raw and
// parses the whole strictly, so errors in the payload carry payload.…
// paths. A payload that is not JSON fails with its own offsets.
func Wrap(raw []byte, from, to Role, taskID string, at time.Time, t Type) (Message, error) {
	var se *SyntaxError
	if _, err := Parse(raw); errors.As(err, &se) {
		return Message{}, err
	}
	env := NewMessage(from, to, taskID, at, NewPayload(t))
	head, err := json.Marshal(env)
	if err != nil {
		return Message{}, fmt.Errorf("encoding the %s envelope: %w", t, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(head, &fields); err != nil {
		return Message{}, fmt.Errorf("encoding the %s envelope: %w", t, err)
	}
	fields["payload"] = json.RawMessage(raw)
	b, err := json.Marshal(fields)
	if err != nil {
		return Message{}, fmt.Errorf("encoding the %s envelope: %w", t, err)
	}
	return Parse(b)
}

// WrapAgent builds the envelope of an agent's payload of one of the
// AgentTypes: from and to by the type's route, except that an escalation
// names its sender with from (any other type takes none).
func WrapAgent(raw []byte, t Type, taskID string, from Role, at time.Time) (Message, error) {
	if !slices.Contains(AgentTypes(), t) {
		return Message{}, &ValidationError{Fields: []FieldError{{Path: "type", Problem: "must be task_result, review_verdict or escalation"}}}
	}
	routeFrom, to := Route(t)
	switch {
	case routeFrom == "" && from == "":
		return Message{}, &ValidationError{Fields: []FieldError{{Path: "from", Problem: "is required for escalation: executor, reviewer, coordinator or admin"}}}
	case routeFrom == "":
		routeFrom = from
	case from != "":
		return Message{}, &ValidationError{Fields: []FieldError{{Path: "from", Problem: fmt.Sprintf("is only for escalation; %s is sent by %s", t, routeFrom)}}}
	}
	return Wrap(raw, routeFrom, to, taskID, at, t)
}
