package amp

import (
	"encoding/json"
	"fmt"
)

// Parse decodes and strictly validates one AMP message: exactly one JSON
// object, no unknown or duplicate fields, every rule of AMP/1.0. Malformed
// input is a *SyntaxError; a well-formed document that breaks rules is a
// *ValidationError naming every failing field.
func Parse(b []byte) (Message, error) {
	tree, dups, err := decodeTree(b)
	if err != nil {
		return Message{}, err
	}
	return messageFromTree(b, tree, dups)
}

// ParseAck decodes and strictly validates one ACK record, with the same
// errors as Parse.
func ParseAck(b []byte) (Ack, error) {
	tree, dups, err := decodeTree(b)
	if err != nil {
		return Ack{}, err
	}
	return ackFromTree(b, tree, dups)
}

// ParseRecord parses what an agent wrote to SSOT: an object with an ack_of
// key is an ACK record, anything else a message.
func ParseRecord(b []byte) (Record, error) {
	tree, dups, err := decodeTree(b)
	if err != nil {
		return Record{}, err
	}
	if obj, ok := tree.(map[string]any); ok {
		if _, isAck := obj["ack_of"]; isAck {
			a, err := ackFromTree(b, tree, dups)
			if err != nil {
				return Record{}, err
			}
			return Record{Ack: &a}, nil
		}
	}
	m, err := messageFromTree(b, tree, dups)
	if err != nil {
		return Record{}, err
	}
	return Record{Message: &m}, nil
}

// Validate checks a message built in Go against the same rules as Parse,
// by marshalling it. A payload whose Go type disagrees with Type is
// reported at "payload".
func (m Message) Validate() error {
	if m.Payload != nil && m.Payload.MessageType() != m.Type {
		return &ValidationError{Fields: []FieldError{{
			Path:    "payload",
			Problem: fmt.Sprintf("is a %s payload but type is %q", m.Payload.MessageType(), m.Type),
		}}}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("marshalling message %s: %w", m.MsgID, err)
	}
	_, err = Parse(b)
	return err
}

// Validate checks an ACK record built in Go against the same rules as
// ParseAck.
func (a Ack) Validate() error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("marshalling ACK %s: %w", a.MsgID, err)
	}
	_, err = ParseAck(b)
	return err
}

func messageFromTree(b []byte, tree any, dups []duplicateKey) (Message, error) {
	c := &checker{}
	c.duplicates(dups)
	c.checkMessage(tree)
	if len(c.errs) > 0 {
		return Message{}, &ValidationError{Fields: c.errs}
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return Message{}, fmt.Errorf("decoding validated message: %w", err)
	}
	canonicalize(&m)
	return m, nil
}

func ackFromTree(b []byte, tree any, dups []duplicateKey) (Ack, error) {
	c := &checker{}
	c.duplicates(dups)
	c.checkAck(tree)
	if len(c.errs) > 0 {
		return Ack{}, &ValidationError{Fields: c.errs}
	}
	var a Ack
	if err := json.Unmarshal(b, &a); err != nil {
		return Ack{}, fmt.Errorf("decoding validated ACK: %w", err)
	}
	if len(a.Metadata) == 0 {
		a.Metadata = nil
	}
	return a, nil
}

func (c *checker) duplicates(dups []duplicateKey) {
	for _, d := range dups {
		c.add(d.path, "duplicate key")
	}
}

// canonicalize drops empty optional collections, which marshal away
// (omitempty), so that a parsed message survives a round trip unchanged.
func canonicalize(m *Message) {
	if len(m.ContextRef) == 0 {
		m.ContextRef = nil
	}
	switch p := m.Payload.(type) {
	case *TaskDispatch:
		if len(p.ForbiddenActions) == 0 {
			p.ForbiddenActions = nil
		}
		if len(p.TechConstraints) == 0 {
			p.TechConstraints = nil
		}
	case *TaskResult:
		if len(p.Blockers) == 0 {
			p.Blockers = nil
		}
	case *ReviewRequest:
		if len(p.CIStatus) == 0 {
			p.CIStatus = nil
		}
	case *ReviewVerdict:
		if len(p.Issues) == 0 {
			p.Issues = nil
		}
		if len(p.DirectFixes) == 0 {
			p.DirectFixes = nil
		}
	case *Escalation:
		if len(p.SuggestedActions) == 0 {
			p.SuggestedActions = nil
		}
	}
}
